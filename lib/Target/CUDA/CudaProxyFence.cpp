//===- CudaProxyFence.cpp - Where wgmma's proxy fence goes ----------------===//
#include "CudaProxyFence.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace enigma {

namespace {
bool isThreadgroupMemRef(Value value) {
  auto type = llvm::dyn_cast<MemRefType>(value.getType());
  return type && getAddressSpace(type) == AddressSpace::Threadgroup;
}

/// The threadgroup allocation `value` views.
Value allocationOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    value = view.getViewSource();
  }
  return value;
}

/// The threadgroup allocations that warpgroup products read (A from
/// memory, B): generic-proxy writes elsewhere need no fence before them.
llvm::DenseSet<Value> warpgroupOperands(KernelOp kernel) {
  llvm::DenseSet<Value> read;
  kernel.walk([&](Operation *op) {
    if (auto mma = dyn_cast<MmaOp>(op); mma && mma.getWarpgroup()) {
      read.insert(allocationOf(mma.getA()));
      read.insert(allocationOf(mma.getB()));
    } else if (auto reg = dyn_cast<MmaRegOp>(op); reg && reg.getWarpgroup()) {
      read.insert(allocationOf(reg.getB()));
    }
  });
  return read;
}

/// Whether `op` may write threadgroup memory that warpgroup products read
/// (`operands`) other than as a tile copy.
bool writesThreadgroupMemory(Operation *op,
                             const llvm::DenseSet<Value> &operands) {
  // Tile copies are fenced at their wait. A pipeline's stage copies are the
  // TMA's (the async proxy, which wgmma reads through) or cp.async copies
  // the producer fences before it commits them; the ring operations touch
  // only the ring's barriers.
  if (isa<CopyTileAsyncOp, StageCopyOp, PipelineRingOp, RingAcquireOp,
          RingCommitOp, RingWaitOp, RingReleaseOp>(op))
    return false;
  auto read = [&](Value v) {
    return isThreadgroupMemRef(v) && operands.contains(allocationOf(v));
  };
  bool touches = llvm::any_of(op->getOperands(), read);
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return touches && !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (const MemoryEffects::EffectInstance &effect : list) {
    if (!isa<MemoryEffects::Write>(effect.getEffect()))
      continue;
    Value on = effect.getValue();
    if (on ? read(on) : touches)
      return true;
  }
  return false;
}
} // namespace

bool cudaFencesAtCopyWait(KernelOp kernel) {
  if (!usesWarpgroupProducts(kernel))
    return false;
  llvm::DenseSet<Value> operands = warpgroupOperands(kernel);
  bool other = false;
  kernel.walk([&](Operation *op) {
    if (writesThreadgroupMemory(op, operands)) {
      other = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !other;
}

} // namespace enigma
