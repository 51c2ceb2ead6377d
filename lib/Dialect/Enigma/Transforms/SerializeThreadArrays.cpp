//===- SerializeThreadArrays.cpp - Per-thread arrays (CPU) ----------------===//
//
// Steps 4 and 5 of enigma-serialize-threads (SerializeThreads.cpp): every
// value used outside the thread loop that defines it goes through a
// per-thread array, and simdgroup functions become enigma.lanes_call over
// those arrays.
//
//===----------------------------------------------------------------------===//
#include "SerializeThreads.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace enigma {
namespace serialize {

//===----------------------------------------------------------------------===//
// Per-thread arrays
//===----------------------------------------------------------------------===//

/// Gives each use of `value` (which lives in `array`) outside `home` its
/// own read: a load at the start of the user's thread loop, or a load of
/// one lane at group level. Simdgroup functions read the array itself.
LogicalResult Serializer::routeUses(Value value, Value array,
                                    ThreadLoopOp home) {
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
    Operation *user = use.getOwner();
    auto loop = user->getParentOfType<ThreadLoopOp>();
    if (loop && loop == home)
      continue;
    if (loop) {
      use.set(loadIn(array, loop));
      continue;
    }
    if (user->hasTrait<Collective>())
      continue; // lowerCollective passes the array
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(user);
    use.set(b.create<memref::LoadOp>(user->getLoc(), array, laneIndex(user)));
  }
  return success();
}

/// A register array used by several thread loops: one group-level array of
/// kMaxThreadsPerGroup slices, each loop working on its thread's slice.
LogicalResult Serializer::sliceRegisterArray(memref::AllocaOp alloca,
                                             ThreadLoopOp home) {
  MemRefType type = alloca.getType();
  if (type.getRank() != 1 || !type.hasStaticShape())
    return alloca->emitOpError("only one-dimensional static arrays can live "
                               "across a barrier on the CPU backend");
  int64_t n = type.getNumElements();
  FailureOr<Value> all = newArray(alloca, type.getElementType(), n);
  if (failed(all))
    return failure();
  llvm::MapVector<Operation *, SmallVector<OpOperand *>> byLoop;
  for (OpOperand &use : alloca.getResult().getUses()) {
    auto loop = use.getOwner()->getParentOfType<ThreadLoopOp>();
    if (!loop)
      return use.getOwner()->emitOpError(
          "uses a per-thread array where all threads run together, which "
          "the CPU backend cannot do");
    byLoop[loop].push_back(&use);
  }
  for (auto &[loopOp, uses] : byLoop) {
    auto loop = cast<ThreadLoopOp>(loopOp);
    Value index = lid(loop);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(prologueEnd[loop]);
    Location loc = alloca.getLoc();
    Value offset =
        b.create<arith::MulIOp>(loc, index, constantIndex(n, loc));
    auto slice = b.create<memref::SubViewOp>(
        loc, *all, ArrayRef<OpFoldResult>{offset},
        ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    prologueEnd[loop] = slice;
    for (OpOperand *use : uses)
      use->set(slice);
  }
  alloca.erase();
  return success();
}

LogicalResult Serializer::spillAcrossLoops() {
  SmallVector<ThreadLoopOp> loops;
  kernel.walk([&](ThreadLoopOp loop) { loops.push_back(loop); });
  for (ThreadLoopOp loop : loops) {
    Block &body = loop.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      for (Value result : op->getResults()) {
        bool escapes = llvm::any_of(result.getUsers(), [&](Operation *user) {
          return user->getParentOfType<ThreadLoopOp>() != loop;
        });
        if (!escapes)
          continue;
        if (auto alloca = dyn_cast<memref::AllocaOp>(op)) {
          if (failed(sliceRegisterArray(alloca, loop)))
            return failure();
          break;
        }
        if (llvm::isa<MemRefType>(result.getType()))
          return op->emitOpError("gives memory used across a barrier, which "
                                 "the CPU backend cannot do");
        // A varying query is recomputed in each loop that reads it.
        if (isThreadVaryingQuery(op)) {
          for (OpOperand &use : llvm::make_early_inc_range(result.getUses()))
            if (auto other = use.getOwner()->getParentOfType<ThreadLoopOp>();
                other && other != loop) {
              OpBuilder::InsertionGuard guard(b);
              lid(other);
              b.setInsertionPointAfter(prologueEnd[other]);
              Operation *copy = b.clone(*op);
              prologueEnd[other] = copy;
              use.set(copy->getResult(0));
            }
          if (llvm::all_of(result.getUsers(), [&](Operation *user) {
                return user->getParentOfType<ThreadLoopOp>() == loop;
              }))
            continue;
        }
        FailureOr<Value> array = newArray(op, result.getType());
        if (failed(array))
          return failure();
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointAfter(op);
        b.create<memref::StoreOp>(op->getLoc(), result, *array, lid(loop));
        arrayOf[result] = *array;
        if (failed(routeUses(result, *array, loop)))
          return failure();
      }
    }
  }
  // Carried values, results and simdgroup function results at group level.
  for (auto [value, array] : arrayOf)
    if (value.getDefiningOp() &&
        !value.getDefiningOp()->getParentOfType<ThreadLoopOp>())
      if (failed(routeUses(value, array, nullptr)))
        return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Simdgroup functions
//===----------------------------------------------------------------------===//

/// The per-thread array holding `v` for a simdgroup function; a value the
/// same for every thread is first written to a temporary array.
Value Serializer::arrayArg(Operation *op, Value v, Value sg) {
  if (Value array = arrayOf.lookup(v))
    return array;
  FailureOr<Value> array = newArray(op, v.getType());
  if (failed(array))
    return {};
  ThreadLoopOp fill = loopBefore(op, sg);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&fill.getBody().front());
  b.create<memref::StoreOp>(op->getLoc(), v, *array, lid(fill));
  return *array;
}

/// A lane / offset operand: the array of a per-thread value, or the value
/// itself when every thread has the same.
Value Serializer::laneArg(Value v) {
  if (Value array = arrayOf.lookup(v))
    return array;
  return v;
}

LogicalResult Serializer::lowerCollective(Operation *op, Value sg) {
  StringRef name = op->getName().stripDialect();
  std::string callee = name.str();
  SmallVector<Value> args;
  auto data = [&](Value v) {
    Value array = arrayArg(op, v, sg);
    args.push_back(array);
    return static_cast<bool>(array);
  };
  auto memory = [&](Value memref) {
    if (perThread.contains(memref) || !isGroupValue(memref))
      return false;
    args.push_back(memref);
    return true;
  };
  bool ok = true;
  if (auto load = dyn_cast<SimdgroupMatrixLoadOp>(op)) {
    if (load.getTranspose())
      callee += "_transposed";
    ok = memory(load.getMemref());
    args.push_back(laneArg(load.getOffset()));
    args.push_back(laneArg(load.getElementsPerRow()));
  } else if (auto store = dyn_cast<SimdgroupMatrixStoreOp>(op)) {
    ok = data(store.getValue()) && memory(store.getMemref());
    args.push_back(laneArg(store.getOffset()));
    args.push_back(laneArg(store.getElementsPerRow()));
  } else if (auto mma = dyn_cast<SimdgroupMultiplyAccumulateOp>(op)) {
    ok = data(mma.getA()) && data(mma.getB()) && data(mma.getC());
  } else if (auto fill = dyn_cast<MakeFilledSimdgroupMatrixOp>(op)) {
    ok = data(fill.getValue());
  } else if ((name.starts_with("simd_") || name.starts_with("quad_")) &&
             op->getNumResults() == 1) {
    if (op->getNumOperands() > 0) // lane queries have none
      ok = data(op->getOperand(0));
    if (op->getNumOperands() > 1)
      args.push_back(laneArg(op->getOperand(1)));
  } else {
    return op->emitOpError("is not supported by the CPU backend yet");
  }
  if (!ok)
    return op->emitOpError("cannot be run by the CPU backend with these "
                           "operands");
  for (Value result : op->getResults())
    args.push_back(arrayOf.lookup(result));

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op->getLoc();
  Value first, last;
  if (sg) {
    first = sg;
    last = b.create<arith::AddIOp>(loc, sg, constantI32(1, loc));
  } else {
    first = constantI32(0, loc);
    last = b.create<SimdgroupsPerThreadgroupOp>(loc);
  }
  b.create<LanesCallOp>(loc, StringRef(callee), args, threadsInGroup(), first,
                        last, op->hasAttr("is_signed"));
  return success();
}

} // namespace serialize
} // namespace enigma
