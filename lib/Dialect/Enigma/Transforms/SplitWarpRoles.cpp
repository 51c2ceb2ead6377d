//===- SplitWarpRoles.cpp - A producer warpgroup and its consumers (CUDA) -===//
//
// `enigma-split-warp-roles` turns a kernel with pipeline rings into the
// explicit form CUDA prints (docs/design/warp-specialization.md): its body
// (all but threadgroup memory and rings) becomes the consumer region of an
// enigma.warp_roles op, and a copy of it, cut down to what the producer
// needs, the producer region:
//
//   producer: the loops and branches around each pipeline, the arithmetic
//             their bounds and the copies need, and per pipeline
//               for i in [lb, ub): slot = ring_acquire; copies; ring_commit
//   consumer: the body, each pipeline now
//               for i in [lb, ub): slot = ring_wait; consumer(i); ring_release
//
// A consumer region that leaves asynchronous products in flight releases
// its stage only when they are complete: after the next iteration's first
// asynchronous product (which waits for all earlier ones), and after the
// loop once the results are waited for. With consumer groups (G of them,
// each running every G-th iteration, ConsumerBody.h) stage i - G is
// released after iteration i, and the last G after the loop.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "ConsumerBody.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

namespace enigma {
namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return b.create<arith::ConstantIndexOp>(loc, v);
}

/// `if (cond) ring_release` at the builder's point.
void releaseIf(OpBuilder &b, Location loc, Value cond, Value ring) {
  auto branch = b.create<scf::IfOp>(loc, cond, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  b.create<RingReleaseOp>(loc, ring);
}

//===----------------------------------------------------------------------===//
// The consumer: pipelines become loops that wait for full stages
//===----------------------------------------------------------------------===//

/// Whether carried value `v` may be in flight at the end of an iteration:
/// the result of an asynchronous product, or of the consumer groups' guard
/// whose branch yields one.
bool isInFlight(Value v, Operation *guard) {
  if (Operation *def = v.getDefiningOp(); def && asynchronousProductAcc(def))
    return true;
  if (!guard || v.getDefiningOp() != guard)
    return false;
  auto branch = cast<scf::IfOp>(guard);
  unsigned k = llvm::cast<OpResult>(v).getResultNumber();
  return isInFlight(branch.thenYield().getOperand(k), nullptr);
}

/// The first asynchronous product at the top level of the loop's body.
Operation *firstAsyncProduct(scf::ForOp loop) {
  for (Operation &op : *loop.getBody())
    if (asynchronousProductAcc(&op))
      return &op;
  return nullptr;
}

void lowerConsumer(PipelineOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value ring = op.getRing(), lb = op.getLower(), ub = op.getUpper();
  auto loop =
      b.create<scf::ForOp>(loc, lb, ub, indexConstant(b, loc, 1), op.getInits());
  // Without carried values the builder adds an empty yield; the body below
  // ends with its own.
  if (op.getInits().empty())
    loop.getBody()->getTerminator()->erase();
  b.setInsertionPointToStart(loop.getBody());
  Value slot = b.create<RingWaitOp>(loc, b.getIndexType(), ring);
  if (Attribute site = op->getAttr("enigma.bounds_site_full"))
    slot.getDefiningOp()->setAttr("enigma.bounds_site", site);
  ClonedConsumer consumer =
      cloneConsumer(b, op, loop.getInductionVar(), slot, loop.getRegionIterArgs());
  SmallVector<Value> next = consumer.next;
  SmallVector<unsigned> inFlight;
  for (auto [k, v] : llvm::enumerate(next))
    if (isInFlight(v, consumer.guard))
      inFlight.push_back(unsigned(k));
  int64_t groups = op.getConsumerGroups();
  Operation *firstAsync =
      consumer.guard ? nullptr : firstAsyncProduct(loop);
  if (inFlight.empty()) {
    b.create<RingReleaseOp>(loc, ring);
  } else if (groups > 1) {
    // A group's products of iteration i - G are complete once its product
    // of iteration i is issued (or, in the other groups, were never
    // there): stage i - G is free in every thread after the guard.
    Value past = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::sge, loop.getInductionVar(),
        b.create<arith::AddIOp>(loc, lb, indexConstant(b, loc, groups)));
    releaseIf(b, loc, past, ring);
  } else if (firstAsync) {
    // The first asynchronous product of iteration i completes those of
    // i - 1: their stage is free then.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(firstAsync);
    // Signed, as the loop compares its bounds.
    Value notFirst = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt,
                                             loop.getInductionVar(), lb);
    releaseIf(b, loc, notFirst, ring);
  } else {
    // Products in flight but none at the top of the region: complete them
    // before the release (correct, without overlap).
    for (unsigned k : inFlight)
      next[k] = b.create<MmaWaitOp>(loc, next[k].getType(), next[k]);
    b.create<RingReleaseOp>(loc, ring);
    inFlight.clear();
  }
  b.create<scf::YieldOp>(loc, next);
  b.setInsertionPointAfter(loop);
  SmallVector<Value> results(loop.getResults());
  if (!inFlight.empty()) {
    for (unsigned k : inFlight)
      results[k] =
          b.create<MmaWaitOp>(loc, results[k].getType(), results[k]);
    // The stages not yet released: the last one, or with groups the last
    // G (fewer when the loop ran fewer iterations).
    for (int64_t j = 0; j < groups; ++j) {
      Value ran = b.create<arith::CmpIOp>(
          loc, arith::CmpIPredicate::sgt, ub,
          b.create<arith::AddIOp>(loc, lb, indexConstant(b, loc, j)));
      releaseIf(b, loc, ran, ring);
    }
  }
  op.replaceAllUsesWith(results);
  op.erase();
}

//===----------------------------------------------------------------------===//
// The producer: pipelines become loops that fill free stages
//===----------------------------------------------------------------------===//

scf::ForOp lowerProducer(PipelineOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value ring = op.getRing();
  auto loop = b.create<scf::ForOp>(loc, op.getLower(), op.getUpper(),
                                   indexConstant(b, loc, 1));
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value slot = b.create<RingAcquireOp>(loc, b.getIndexType(), ring);
  // Bounds-checked mode: the wait's site (BoundsCheck.cpp).
  if (Attribute site = op->getAttr("enigma.bounds_site_empty"))
    slot.getDefiningOp()->setAttr("enigma.bounds_site", site);
  Block &producer = op.getProducer().front();
  IRMapping map;
  map.map(producer.getArgument(0), loop.getInductionVar());
  map.map(producer.getArgument(1), slot);
  int64_t bytes = 0;
  for (Operation &inner : producer.without_terminator()) {
    b.clone(inner, map);
    if (auto copy = dyn_cast<StageCopyOp>(inner))
      bytes += copy.getTransactionBytes();
  }
  b.create<RingCommitOp>(loc, ring, slot, b.getI64IntegerAttr(bytes));
  // The consumers' results do not exist here; what used them is cut away.
  op.replaceAllUsesWith(op.getInits());
  op.erase();
  return loop;
}

/// What the producer region must keep: the producer loops, the control
/// flow around them, and the values they use, found backwards; the rest of
/// the copied body is the consumers' and is removed.
class ProducerSlice {
public:
  explicit ProducerSlice(Region &region) : region(region) {}

  LogicalResult run(ArrayRef<scf::ForOp> loops) {
    for (scf::ForOp loop : loops)
      loop.walk([&](Operation *op) { needOp(op); });
    while (!work.empty())
      needValue(work.pop_back_val());
    if (failed(checkNeeded()))
      return failure();
    rebuildControlFlow();
    eraseTheRest();
    return failure(failedToErase);
  }

private:
  bool inside(Operation *op) {
    return op && region.isAncestor(op->getParentRegion());
  }

  void needOp(Operation *op) {
    if (!inside(op) || !needed.insert(op).second)
      return;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      work.append({loop.getLowerBound(), loop.getUpperBound(), loop.getStep()});
    else if (auto branch = dyn_cast<scf::IfOp>(op))
      work.push_back(branch.getCondition());
    else if (!isa<scf::YieldOp>(op))
      llvm::append_range(work, op->getOperands());
    needOp(op->getParentOp());
  }

  void needCarried(Operation *op, unsigned k) {
    llvm::SmallBitVector &bits = neededResults[op];
    if (bits.size() < op->getNumResults())
      bits.resize(op->getNumResults());
    if (bits.test(k))
      return;
    bits.set(k);
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      work.push_back(loop.getInitArgs()[k]);
      work.push_back(loop.getBody()->getTerminator()->getOperand(k));
    } else if (auto branch = dyn_cast<scf::IfOp>(op)) {
      work.push_back(branch.thenYield().getOperand(k));
      if (!branch.getElseRegion().empty())
        work.push_back(branch.elseYield().getOperand(k));
    }
    needOp(op);
  }

  void needValue(Value v) {
    if (!region.isAncestor(v.getParentRegion()))
      return; // defined before the split: both roles have it
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (auto loop = dyn_cast<scf::ForOp>(owner);
          loop && arg != loop.getInductionVar())
        needCarried(loop, arg.getArgNumber() - 1);
      else
        needOp(owner);
      return;
    }
    Operation *def = v.getDefiningOp();
    unsigned k = llvm::cast<OpResult>(v).getResultNumber();
    if (isa<scf::ForOp, scf::IfOp>(def))
      needCarried(def, k);
    else
      needOp(def);
  }

  /// The producer runs what it needs: it must be free of side effects
  /// outside the copies and read only buffers the kernel never writes
  /// (producerMayRun; the verifier of enigma.pipeline sees to the
  /// pipelines' own operands, this catches enclosing loop bounds and
  /// branch conditions).
  LogicalResult checkNeeded() {
    for (Operation *op : needed) {
      if (isa<scf::ForOp, scf::IfOp, scf::YieldOp, RingAcquireOp,
              RingCommitOp, StageCopyOp>(op) ||
          producerMayRun(op))
        continue;
      return op->emitOpError(
          "is needed by a pipeline's producer (a loop bound, branch "
          "condition or copy operand depends on it), but only the "
          "consumers may run it: it writes memory, or reads memory the "
          "kernel writes");
    }
    return success();
  }

  void rebuildControlFlow() {
    SmallVector<Operation *> ops;
    region.walk([&](Operation *op) {
      if (needed.contains(op) && isa<scf::ForOp, scf::IfOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      llvm::SmallBitVector keep = neededResults.lookup(op);
      keep.resize(op->getNumResults());
      if (keep.all())
        continue;
      if (auto loop = dyn_cast<scf::ForOp>(op))
        rebuildFor(loop, keep);
      else
        rebuildIf(cast<scf::IfOp>(op), keep);
    }
  }

  void rebuildFor(scf::ForOp loop, const llvm::SmallBitVector &keep) {
    OpBuilder b(loop);
    SmallVector<Value> inits;
    for (unsigned k = 0; k < loop.getNumResults(); ++k)
      if (keep.test(k))
        inits.push_back(loop.getInitArgs()[k]);
    auto fresh = b.create<scf::ForOp>(loop.getLoc(), loop.getLowerBound(),
                                      loop.getUpperBound(), loop.getStep(),
                                      inits);
    Block *body = fresh.getBody();
    while (!body->empty())
      body->back().erase();
    body->getOperations().splice(body->end(),
                                 loop.getBody()->getOperations());
    loop.getInductionVar().replaceAllUsesWith(fresh.getInductionVar());
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    SmallVector<Value> yielded;
    unsigned j = 0;
    for (unsigned k = 0; k < loop.getNumResults(); ++k) {
      Value old = loop.getRegionIterArgs()[k];
      if (keep.test(k)) {
        old.replaceAllUsesWith(fresh.getRegionIterArgs()[j]);
        loop.getResult(k).replaceAllUsesWith(fresh.getResult(j));
        yielded.push_back(yield.getOperand(k));
        ++j;
      } else {
        // Only the consumers' ops, about to be erased, use these.
        old.replaceAllUsesWith(loop.getInitArgs()[k]);
        loop.getResult(k).replaceAllUsesWith(loop.getInitArgs()[k]);
      }
    }
    yield->setOperands(yielded);
    needed.erase(loop);
    needed.insert(fresh);
    loop.erase();
  }

  void rebuildIf(scf::IfOp branch, const llvm::SmallBitVector &keep) {
    OpBuilder b(branch);
    SmallVector<Type> types;
    for (unsigned k = 0; k < branch.getNumResults(); ++k)
      if (keep.test(k))
        types.push_back(branch.getResult(k).getType());
    auto fresh = b.create<scf::IfOp>(branch.getLoc(), types,
                                     branch.getCondition(),
                                     !branch.getElseRegion().empty());
    for (auto [from, to] : {std::pair(&branch.getThenRegion(),
                                      &fresh.getThenRegion()),
                            std::pair(&branch.getElseRegion(),
                                      &fresh.getElseRegion())}) {
      if (from->empty())
        continue;
      to->getBlocks().clear();
      to->takeBody(*from);
      auto yield = cast<scf::YieldOp>(to->front().getTerminator());
      SmallVector<Value> kept;
      for (unsigned k = 0; k < yield.getNumOperands(); ++k)
        if (keep.test(k))
          kept.push_back(yield.getOperand(k));
      yield->setOperands(kept);
    }
    unsigned j = 0;
    for (unsigned k = 0; k < branch.getNumResults(); ++k) {
      if (keep.test(k))
        branch.getResult(k).replaceAllUsesWith(fresh.getResult(j++));
      else
        branch.getResult(k).dropAllUses();
    }
    needed.erase(branch);
    needed.insert(fresh);
    branch.erase();
  }

  void eraseTheRest() {
    SmallVector<Operation *> doomed;
    region.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op->hasTrait<OpTrait::IsTerminator>() || needed.contains(op))
        return WalkResult::advance();
      doomed.push_back(op);
      return WalkResult::skip(); // erased with it
    });
    for (Operation *op : llvm::reverse(doomed)) {
      if (!op->use_empty()) {
        op->emitOpError("internal error: the producer's slice still uses "
                        "this op");
        failedToErase = true;
        continue;
      }
      op->erase();
    }
  }

  Region &region;
  llvm::DenseSet<Operation *> needed;
  llvm::DenseMap<Operation *, llvm::SmallBitVector> neededResults;
  SmallVector<Value> work;
  bool failedToErase = false;
};

LogicalResult splitKernel(KernelOp kernel) {
  Block &body = kernel.getBody().front();
  Operation *end = body.getTerminator();
  OpBuilder b(end);
  Location loc = kernel.getLoc();
  auto roles = b.create<WarpRolesOp>(loc);
  Block *consumer = b.createBlock(&roles.getConsumer());
  Block *producer = b.createBlock(&roles.getProducer());
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (&op == roles.getOperation() || &op == end ||
        op.hasTrait<GroupScope>())
      continue;
    op.moveBefore(consumer, consumer->end());
  }
  b.setInsertionPointToEnd(producer);
  IRMapping map;
  for (Operation &op : *consumer)
    b.clone(op, map);
  b.create<PipelineYieldOp>(loc, ValueRange{});
  b.setInsertionPointToEnd(consumer);
  b.create<PipelineYieldOp>(loc, ValueRange{});

  SmallVector<PipelineOp> pipelines;
  roles.getProducer().walk([&](PipelineOp op) { pipelines.push_back(op); });
  SmallVector<scf::ForOp> loops;
  for (PipelineOp op : pipelines)
    loops.push_back(lowerProducer(op));
  if (failed(ProducerSlice(roles.getProducer()).run(loops)))
    return failure();

  pipelines.clear();
  roles.getConsumer().walk([&](PipelineOp op) { pipelines.push_back(op); });
  for (PipelineOp op : pipelines)
    lowerConsumer(op);
  return success();
}

struct SplitWarpRolesPass
    : public PassWrapper<SplitWarpRolesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitWarpRolesPass)

  StringRef getArgument() const override { return "enigma-split-warp-roles"; }
  StringRef getDescription() const override {
    return "Give kernels with pipeline rings a producer warpgroup and "
           "consumer warps (CUDA)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect>();
  }
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](KernelOp kernel) {
      bool split = false;
      kernel.walk([&](WarpRolesOp) { split = true; });
      if (split || !usesPipelines(kernel))
        return WalkResult::advance();
      return failed(splitKernel(kernel)) ? WalkResult::interrupt()
                                         : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createSplitWarpRolesPass() {
  return std::make_unique<SplitWarpRolesPass>();
}

} // namespace enigma
