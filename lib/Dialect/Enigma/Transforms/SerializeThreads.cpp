//===- SerializeThreads.cpp - A group's threads one after another (CPU) ---===//
//
// The CPU backend runs the threads of a threadgroup one after another. This
// pass rewrites a kernel, whose body is one thread's program, into a body
// that runs once per threadgroup (EnigmaThreadLoopOps.td):
//
// 1. The ops of each group-level block are cut at the points all threads
//    must reach together: barriers, simdgroup functions (the Collective
//    trait), async-copy waits, and scf.for / scf.if holding one of these.
//    Each stretch between two such points becomes an enigma.thread_loop, so
//    every thread finishes it before any starts the next: exactly the
//    guarantee of threadgroup_barrier. Without such points the whole body
//    is one thread loop, which the printer makes a loop nest the host
//    compiler vectorises.
// 2. Ops whose value is the same for every thread (constants, uniform
//    queries, arith / math on those and on parameters and group-level loop
//    counters) stay at group level, between the loops, when there is more
//    than one loop.
// 3. scf.for / scf.if / scf.while holding a cut point run once per group
//    (the dialect's verifiers make their bounds and conditions uniform; a
//    while loop's condition is read from the first thread). Their carried
//    values and results are per thread, so they move into per-thread
//    arrays: the loop before writes the initial values, the last loop of
//    the body writes what it yields. A construct whose condition or bounds
//    may differ between simdgroups (the simd verifier only promises that a
//    simdgroup's lanes agree) runs once per simdgroup instead: inside a
//    group-level loop over the simdgroups, its thread loops and simdgroup
//    functions cover that simdgroup's lanes and its condition is read from
//    the simdgroup's first lane. That order is a valid Metal schedule
//    because no threadgroup barrier can sit inside such a construct.
// 4. Every value used outside the thread loop that defines it goes through
//    a per-thread array (memref<1024 x T>, indexed by the thread's linear
//    index): stored after its definition, loaded at the start of each other
//    loop that uses it, or at group level from lane 0 (uniform) or the
//    simdgroup's first lane. A register array used by several loops becomes
//    one array of 1024 slices. Varying thread queries are recomputed in
//    each loop instead.
// 5. Simdgroup functions become enigma.lanes_call over the arrays of their
//    operands and results; async-copy waits disappear (a lane's copies are
//    done when its thread loop ends).
//
//===----------------------------------------------------------------------===//
#include "SerializeThreads.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace enigma {
namespace serialize {

/// Where all threads of a group (or of a simdgroup) must arrive together.
bool isCutPoint(Operation *op) {
  return isa<BarrierOp, SimdBarrierOp>(op) || op->hasTrait<Collective>();
}

bool holdsCutPoint(Operation *root) {
  return root
      ->walk([](Operation *op) {
        return isCutPoint(op) ? WalkResult::interrupt()
                              : WalkResult::advance();
      })
      .wasInterrupted();
}

bool isGroupLevel(Operation *op) {
  return isCutPoint(op) || (op->getNumRegions() > 0 && holdsCutPoint(op));
}

/// Whether the condition or bounds of a group-level scf.if / scf.for may
/// differ between the simdgroups of a threadgroup.
bool variesBetweenSimdgroups(Operation *op) {
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return isThreadVarying(ifOp.getCondition(), SyncScope::Threadgroup);
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    for (Value bound :
         {forOp.getLowerBound(), forOp.getUpperBound(), forOp.getStep()})
      if (isThreadVarying(bound, SyncScope::Threadgroup))
        return true;
  if (auto whileOp = dyn_cast<scf::WhileOp>(op))
    return isThreadVarying(whileOp.getConditionOp().getCondition(),
                           SyncScope::Threadgroup);
  return false;
}

bool hasFragmentType(Operation *op) {
  auto isTensor = [](Type t) { return llvm::isa<RankedTensorType>(t); };
  return llvm::any_of(op->getOperandTypes(), isTensor) ||
         llvm::any_of(op->getResultTypes(), isTensor);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

void Serializer::atSetup() {
  if (setupEnd)
    b.setInsertionPointAfter(setupEnd);
  else
    b.setInsertionPointToStart(entry);
}

Value Serializer::constantI32(int32_t v, Location loc) {
  return b.create<arith::ConstantIntOp>(loc, v, 32);
}

Value Serializer::constantIndex(int64_t v, Location loc) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

FailureOr<Value> Serializer::newArray(Operation *user, Type element,
                                      int64_t size) {
  if (!MemRefType::isValidElementType(element))
    return user->emitOpError("uses a value of type ")
           << element
           << " across a barrier or simdgroup function, which the CPU "
              "backend cannot keep per thread";
  OpBuilder::InsertionGuard guard(b);
  atSetup();
  auto type = MemRefType::get(
      {kMaxThreadsPerGroup * size}, element, MemRefLayoutAttrInterface{},
      AddressSpaceAttr::get(b.getContext(), AddressSpace::Thread));
  auto alloca = b.create<memref::AllocaOp>(kernel.getLoc(), type);
  doneSetup(alloca);
  return alloca.getResult();
}

Value Serializer::threadsInGroup() {
  if (groupThreads)
    return groupThreads;
  OpBuilder::InsertionGuard guard(b);
  atSetup();
  Location loc = kernel.getLoc();
  Value n = b.create<ThreadsPerThreadgroupOp>(loc, Dim::X);
  for (Dim d : {Dim::Y, Dim::Z})
    n = b.create<arith::MulIOp>(loc, n,
                                b.create<ThreadsPerThreadgroupOp>(loc, d));
  doneSetup(n.getDefiningOp());
  return groupThreads = n;
}

Value Serializer::lid(ThreadLoopOp loop) {
  if (Value v = lidOf.lookup(loop))
    return v;
  OpBuilder::InsertionGuard guard(b);
  Block &body = loop.getBody().front();
  b.setInsertionPointToStart(&body);
  Location loc = loop.getLoc();
  Value q = b.create<ThreadIndexInThreadgroupOp>(loc);
  Value index = b.create<arith::IndexCastUIOp>(loc, b.getIndexType(), q);
  prologueEnd[loop] = index.getDefiningOp();
  return lidOf[loop] = index;
}

/// `array[lid]` at the start of `loop`, once per loop.
Value Serializer::loadIn(Value array, ThreadLoopOp loop) {
  auto key = std::make_pair(array, loop.getOperation());
  if (Value v = loaded.lookup(key))
    return v;
  Value index = lid(loop);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(prologueEnd[loop]);
  auto load = b.create<memref::LoadOp>(loop.getLoc(), array, index);
  prologueEnd[loop] = load;
  return loaded[key] = load.getResult();
}

/// The lane a group-level `user` reads per-thread values from: lane 0, or
/// the first lane of the simdgroup when it runs once per simdgroup.
Value Serializer::laneIndex(Operation *user) {
  Location loc = user->getLoc();
  for (Operation *p = user->getParentOp(); p && p != kernel;
       p = p->getParentOp()) {
    if (!sgLoops.contains(p))
      continue;
    Value sg = cast<scf::ForOp>(p).getInductionVar();
    Value first = b.create<arith::MulIOp>(loc, sg, constantI32(32, loc));
    return b.create<arith::IndexCastUIOp>(loc, b.getIndexType(), first);
  }
  return constantIndex(0, loc);
}

/// The thread loop right before `pos` (made when there is none).
ThreadLoopOp Serializer::loopBefore(Operation *pos, Value sg) {
  if (auto prev = dyn_cast_or_null<ThreadLoopOp>(pos->getPrevNode()))
    return prev;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(pos);
  return b.create<ThreadLoopOp>(pos->getLoc(), sg);
}

/// A group-level stand-in for a per-thread value that lives in `array`;
/// spillAcrossLoops gives each of its uses a load of its own.
Value Serializer::placeholder(Value array, OpBuilder::InsertPoint at) {
  OpBuilder::InsertionGuard guard(b);
  b.restoreInsertionPoint(at);
  Location loc = kernel.getLoc();
  auto load = b.create<memref::LoadOp>(loc, array, constantIndex(0, loc));
  placeholders.push_back(load);
  perThread.insert(load.getResult());
  arrayOf[load.getResult()] = array;
  return load.getResult();
}

//===----------------------------------------------------------------------===//
// Thread loops and group-level constructs
//===----------------------------------------------------------------------===//

/// Values every thread of the group agrees on: parameters, group-level loop
/// counters, uniform queries and what is computed from them at group level.
bool Serializer::isGroupValue(Value v) {
  if (perThread.contains(v))
    return false;
  Operation *def = v.getDefiningOp();
  // A simdgroup function's result differs between lanes, and a group-level
  // construct's results are per thread (its carried values).
  if (def && isGroupLevel(def))
    return false;
  if (!def)
    def = llvm::cast<BlockArgument>(v).getOwner()->getParentOp();
  else if (runOps.contains(def))
    return false;
  return !def->getParentOfType<ThreadLoopOp>() && !isa<ThreadLoopOp>(def);
}

bool Serializer::staysAtGroupLevel(Operation *op) {
  // Without cut points the body is one thread loop; the host compiler
  // hoists what does not vary itself.
  if (!hasCutPoints || op->getNumRegions() || !isMemoryEffectFree(op) || hasFragmentType(op))
    return false;
  bool uniformQuery =
      isa<ThreadgroupPositionInGridOp, ThreadsPerThreadgroupOp,
          ThreadsPerGridOp, ThreadgroupsPerGridOp, ThreadsPerSimdgroupOp,
          SimdgroupsPerThreadgroupOp>(op);
  if (!uniformQuery &&
      !isa<arith::ArithDialect, math::MathDialect>(op->getDialect()))
    return false;
  return llvm::all_of(op->getOperands(),
                      [&](Value v) { return isGroupValue(v); });
}

void Serializer::closeRun(SmallVectorImpl<Operation *> &run, Value sg) {
  if (run.empty())
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(run.back());
  auto loop = b.create<ThreadLoopOp>(run.front()->getLoc(), sg);
  Block &body = loop.getBody().front();
  for (Operation *op : run)
    op->moveBefore(&body, body.end());
  run.clear();
}

LogicalResult Serializer::structure(Block &block, Value sg) {
  SmallVector<Operation *> run, groupLevel;
  runOps.clear();
  for (Operation &op : llvm::make_early_inc_range(block.without_terminator())) {
    if (op.hasTrait<GroupScope>())
      continue; // hoisted to the prologue
    if (isGroupLevel(&op)) {
      closeRun(run, sg);
      groupLevel.push_back(&op);
    } else if (!staysAtGroupLevel(&op)) {
      run.push_back(&op);
      runOps.insert(&op);
    } else if (!run.empty()) {
      op.moveBefore(run.front()); // ahead of the run's thread loop
    }
  }
  closeRun(run, sg);
  runOps.clear();
  for (Operation *op : groupLevel)
    if (failed(handleGroupLevel(op, sg)))
      return failure();
  return success();
}

LogicalResult Serializer::handleGroupLevel(Operation *op, Value sg) {
  if (isa<BarrierOp, SimdBarrierOp>(op))
    return success(); // the thread loops around it keep its order
  if (isa<AsyncCopyWaitOp>(op)) {
    op->erase(); // a lane's copies are done when its thread loop ends
    return success();
  }
  if (op->hasTrait<Collective>()) {
    collectives.push_back({op, sg});
    for (Value result : op->getResults()) {
      FailureOr<Value> array = newArray(op, result.getType());
      if (failed(array))
        return failure();
      perThread.insert(result);
      arrayOf[result] = *array;
    }
    return success();
  }
  if (!isa<scf::ForOp, scf::IfOp, scf::WhileOp>(op))
    return op->emitOpError(
        "contains a barrier; the CPU backend runs barriers only at the top "
        "level of a kernel or inside loops and if_ blocks");
  Operation *outer = op;
  Value inner = sg;
  if (!sg && perSimdgroup.contains(op)) {
    // for (sg = 0; sg < simdgroups_per_threadgroup; ++sg) { op }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(op);
    Location loc = op->getLoc();
    Value count = b.create<SimdgroupsPerThreadgroupOp>(loc);
    auto loop = b.create<scf::ForOp>(loc, constantI32(0, loc), count,
                                     constantI32(1, loc));
    op->moveBefore(loop.getBody()->getTerminator());
    sgLoops.insert(loop);
    outer = loop;
    inner = loop.getInductionVar();
  }
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return handleFor(forOp, outer, sg, inner);
  if (auto whileOp = dyn_cast<scf::WhileOp>(op))
    return handleWhile(whileOp, outer, sg, inner);
  return handleIf(cast<scf::IfOp>(op), outer, inner);
}

LogicalResult Serializer::perThreadArrays(Operation *op, ValueRange values,
                                          SmallVectorImpl<Value> &arrays) {
  for (Value value : values) {
    FailureOr<Value> array = newArray(op, value.getType());
    if (failed(array))
      return failure();
    arrays.push_back(*array);
    perThread.insert(value);
  }
  return success();
}

void Serializer::storeAtEnd(ThreadLoopOp loop, ValueRange values,
                            ValueRange arrays, Location loc) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&loop.getBody().front());
  for (auto [value, array] : llvm::zip(values, arrays))
    b.create<memref::StoreOp>(loc, value, array, lid(loop));
}

void Serializer::replaceResults(ValueRange results, ValueRange arrays,
                                Operation *outer) {
  for (auto [result, array] : llvm::zip(results, arrays))
    result.replaceAllUsesWith(placeholder(
        array, OpBuilder::InsertPoint(outer->getBlock(),
                                      std::next(outer->getIterator()))));
}

LogicalResult Serializer::handleFor(scf::ForOp op, Operation *outer,
                                    Value outerSg, Value sg) {
  // Carried values live in per-thread arrays.
  SmallVector<Value> arrays;
  if (failed(perThreadArrays(op, op.getRegionIterArgs(), arrays)))
    return failure();
  for (Value result : op.getResults())
    perThread.insert(result);
  if (!arrays.empty())
    storeAtEnd(loopBefore(outer, outerSg), op.getInitArgs(), arrays,
               op.getLoc());
  if (failed(structure(*op.getBody(), sg)))
    return failure();
  if (arrays.empty())
    return success();

  Operation *yield = op.getBody()->getTerminator();
  storeAtEnd(loopBefore(yield, sg), yield->getOperands(), arrays, op.getLoc());
  // The same loop without carried values.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  auto plain = b.create<scf::ForOp>(op.getLoc(), op.getLowerBound(),
                                    op.getUpperBound(), op.getStep());
  Block *body = plain.getBody();
  body->getOperations().splice(body->begin(), op.getBody()->getOperations(),
                               op.getBody()->begin(), yield->getIterator());
  op.getInductionVar().replaceAllUsesWith(plain.getInductionVar());
  for (auto [arg, array] : llvm::zip(op.getRegionIterArgs(), arrays))
    arg.replaceAllUsesWith(
        placeholder(array, OpBuilder::InsertPoint(body, body->begin())));
  replaceResults(op.getResults(), arrays, outer);
  op.erase();
  return success();
}

LogicalResult Serializer::handleIf(scf::IfOp op, Operation *outer, Value sg) {
  SmallVector<Value> arrays;
  if (failed(perThreadArrays(op, op.getResults(), arrays)))
    return failure();
  for (Region *arm : {&op.getThenRegion(), &op.getElseRegion()}) {
    if (arm->empty())
      continue;
    Block &block = arm->front();
    if (failed(structure(block, sg)))
      return failure();
    if (arrays.empty())
      continue;
    Operation *yield = block.getTerminator();
    storeAtEnd(loopBefore(yield, sg), yield->getOperands(), arrays,
               op.getLoc());
  }
  if (arrays.empty())
    return success();
  // The same branch without results.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  bool hasElse = !op.getElseRegion().empty();
  auto plain = b.create<scf::IfOp>(op.getLoc(), TypeRange{},
                                   op.getCondition(), hasElse);
  auto moveArm = [](Block &from, Block &to) {
    to.getOperations().splice(to.begin(), from.getOperations(), from.begin(),
                              from.getTerminator()->getIterator());
  };
  moveArm(op.getThenRegion().front(), plain.getThenRegion().front());
  if (hasElse)
    moveArm(op.getElseRegion().front(), plain.getElseRegion().front());
  replaceResults(op.getResults(), arrays, outer);
  op.erase();
  return success();
}

/// A while loop holding a barrier: the values its condition region and its
/// body receive live in per-thread arrays (one set for each region), and
/// the condition, computed by every thread, is read from the first thread
/// at group level (spillAcrossLoops routes it).
LogicalResult Serializer::handleWhile(scf::WhileOp op, Operation *outer,
                                      Value outerSg, Value sg) {
  Block *before = op.getBeforeBody();
  Block *after = op.getAfterBody();
  SmallVector<Value> beforeArrays, afterArrays;
  if (failed(perThreadArrays(op, before->getArguments(), beforeArrays)) ||
      failed(perThreadArrays(op, after->getArguments(), afterArrays)))
    return failure();
  for (Value result : op.getResults())
    perThread.insert(result);
  if (!beforeArrays.empty())
    storeAtEnd(loopBefore(outer, outerSg), op.getInits(), beforeArrays,
               op.getLoc());
  if (failed(structure(*before, sg)) || failed(structure(*after, sg)))
    return failure();
  scf::ConditionOp condition = op.getConditionOp();
  Operation *yield = after->getTerminator();
  if (!afterArrays.empty())
    storeAtEnd(loopBefore(condition, sg), condition.getArgs(), afterArrays,
               op.getLoc());
  if (!beforeArrays.empty())
    storeAtEnd(loopBefore(yield, sg), yield->getOperands(), beforeArrays,
               op.getLoc());
  // The same loop without carried values.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  auto plain = b.create<scf::WhileOp>(op.getLoc(), TypeRange{}, ValueRange{});
  Block *plainBefore = b.createBlock(&plain.getBefore());
  Block *plainAfter = b.createBlock(&plain.getAfter());
  plainBefore->getOperations().splice(plainBefore->begin(),
                                      before->getOperations(), before->begin(),
                                      condition->getIterator());
  plainAfter->getOperations().splice(plainAfter->begin(),
                                     after->getOperations(), after->begin(),
                                     yield->getIterator());
  b.setInsertionPointToEnd(plainBefore);
  b.create<scf::ConditionOp>(condition.getLoc(), condition.getCondition(),
                             ValueRange{});
  b.setInsertionPointToEnd(plainAfter);
  b.create<scf::YieldOp>(yield->getLoc());
  for (auto [arg, array] : llvm::zip(before->getArguments(), beforeArrays))
    arg.replaceAllUsesWith(placeholder(
        array, OpBuilder::InsertPoint(plainBefore, plainBefore->begin())));
  for (auto [arg, array] : llvm::zip(after->getArguments(), afterArrays))
    arg.replaceAllUsesWith(placeholder(
        array, OpBuilder::InsertPoint(plainAfter, plainAfter->begin())));
  replaceResults(op.getResults(), afterArrays, outer);
  op.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult Serializer::run() {
  hasCutPoints = holdsCutPoint(kernel);
  kernel.walk([&](Operation *op) {
    if (isa<scf::ForOp, scf::IfOp, scf::WhileOp>(op) && holdsCutPoint(op) &&
        variesBetweenSimdgroups(op))
      perSimdgroup.insert(op);
  });
  // Threadgroup memory first: it is allocated once per group.
  for (Operation &op : llvm::make_early_inc_range(*entry))
    if (op.hasTrait<GroupScope>()) {
      if (setupEnd)
        op.moveAfter(setupEnd);
      else
        op.moveBefore(entry, entry->begin());
      setupEnd = &op;
    }
  if (failed(structure(*entry, Value())) || failed(spillAcrossLoops()))
    return failure();
  for (auto [op, sg] : collectives)
    if (failed(lowerCollective(op, sg)))
      return failure();
  for (auto &[op, sg] : llvm::reverse(collectives)) {
    op->dropAllUses();
    op->erase();
  }
  for (Operation *op : llvm::reverse(placeholders)) {
    if (!op->use_empty())
      return op->emitOpError("internal error: a per-thread value kept a "
                             "group-level use");
    Value index = op->getOperand(1);
    op->erase();
    if (Operation *def = index.getDefiningOp(); def && def->use_empty())
      def->erase();
  }
  kernel->setAttr(kSerializedThreadsAttr, b.getUnitAttr());
  return success();
}

} // namespace serialize

namespace {

using serialize::Serializer;

struct SerializeThreadsPass
    : public PassWrapper<SerializeThreadsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SerializeThreadsPass)

  StringRef getArgument() const override {
    return "enigma-serialize-threads";
  }
  StringRef getDescription() const override {
    return "Run the threads of a threadgroup one after another in thread "
           "loops split at barriers and simdgroup functions (CPU backend)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  }
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](KernelOp kernel) {
      if (kernel->hasAttr(kSerializedThreadsAttr))
        return WalkResult::advance();
      // A thread's products are complete at once here: what was
      // asynchronous becomes a value like any other (stored across
      // barriers).
      kernel.walk([](MmaOp mma) { mma.setAsynchronous(false); });
      kernel.walk([](MmaRegOp mma) { mma.setAsynchronous(false); });
      kernel.walk([](MmaWaitOp wait) { wait.setPending(0); });
      return failed(Serializer(kernel).run()) ? WalkResult::interrupt()
                                              : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createSerializeThreadsPass() {
  return std::make_unique<SerializeThreadsPass>();
}

} // namespace enigma
