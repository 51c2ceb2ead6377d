//===- CudaSharedMemory.cpp - Where threadgroup arrays live on CUDA -------===//
#include "CudaSharedMemory.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Target/Emit.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace enigma {

uint64_t CudaSharedLayout::offsetOf(Operation *alloc) const {
  for (const auto &[op, offset] : offsets)
    if (op == alloc)
      return offset;
  return 0;
}

CudaSharedLayout cudaSharedLayout(KernelOp kernel) {
  CudaSharedLayout layout;
  // Pipeline rings keep their barriers in static shared memory beside the
  // arrays (CudaPipelines.h).
  uint64_t total = ThreadgroupAllocOp::totalBytes(kernel);
  for (PipelineRingOp ring : pipelineRings(kernel))
    total += uint64_t(ring.getBarrierBytes());
  layout.dynamic = total > CudaSharedLayout::kStaticLimit;
  // Each aligned array may cost up to 1008 bytes of padding before it.
  uint64_t padding = 0;
  for (auto alloc : kernel.getBody().front().getOps<ThreadgroupAllocOp>())
    if (CudaSharedLayout::isLarge(alloc.getPaddedBytes()))
      padding += CudaSharedLayout::kLargeAlignment - 16;
  layout.alignsLarge =
      total + padding <= (layout.dynamic ? CudaSharedLayout::kDeviceLimit
                                   : CudaSharedLayout::kStaticLimit);
  if (!layout.dynamic)
    return layout;
  uint64_t end = 0;
  for (auto alloc : kernel.getBody().front().getOps<ThreadgroupAllocOp>()) {
    uint64_t bytes = alloc.getPaddedBytes();
    bool large = layout.alignsLarge && CudaSharedLayout::isLarge(bytes);
    uint64_t at = llvm::alignTo(end, large ? CudaSharedLayout::kLargeAlignment
                                           : ThreadgroupAllocOp::kAlignment);
    layout.offsets.push_back({alloc.getOperation(), at});
    end = at + bytes;
  }
  layout.bytes = llvm::alignTo(end, ThreadgroupAllocOp::kAlignment);
  return layout;
}

uint64_t cudaDynamicSharedBytes(KernelOp kernel) {
  return cudaSharedLayout(kernel).bytes;
}

} // namespace enigma
