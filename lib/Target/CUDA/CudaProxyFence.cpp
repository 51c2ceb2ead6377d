//===- CudaProxyFence.cpp - Where wgmma's proxy fence goes ----------------===//
#include "CudaProxyFence.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace enigma {

namespace {
bool isThreadgroupMemRef(Value value) {
  auto type = llvm::dyn_cast<MemRefType>(value.getType());
  return type && getAddressSpace(type) == AddressSpace::Threadgroup;
}

/// Whether `op` may write threadgroup memory other than as a tile copy.
bool writesThreadgroupMemory(Operation *op) {
  // Tile copies are fenced at their wait. A pipeline's stage copies are the
  // TMA's (the async proxy, which wgmma reads through) or cp.async copies
  // the producer fences before it commits them; the ring operations touch
  // only the ring's barriers.
  if (isa<CopyTileAsyncOp, StageCopyOp, PipelineRingOp, RingAcquireOp,
          RingCommitOp, RingWaitOp, RingReleaseOp>(op))
    return false;
  bool touches = llvm::any_of(op->getOperands(), isThreadgroupMemRef);
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return touches && !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (const MemoryEffects::EffectInstance &effect : list) {
    if (!isa<MemoryEffects::Write>(effect.getEffect()))
      continue;
    Value on = effect.getValue();
    if (on ? isThreadgroupMemRef(on) : touches)
      return true;
  }
  return false;
}
} // namespace

bool cudaFencesAtCopyWait(KernelOp kernel) {
  if (!usesWarpgroupProducts(kernel))
    return false;
  bool other = false;
  kernel.walk([&](Operation *op) {
    if (writesThreadgroupMemory(op)) {
      other = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return !other;
}

} // namespace enigma
