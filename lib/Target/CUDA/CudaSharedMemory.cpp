//===- CudaSharedMemory.cpp - Where threadgroup arrays live on CUDA -------===//
#include "CudaSharedMemory.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Target/Emit.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace enigma {

namespace {
/// Static __shared__ memory CUDA allows a block.
constexpr uint64_t kStaticLimit = 48 * 1024;
} // namespace

uint64_t CudaSharedLayout::offsetOf(Operation *alloc) const {
  for (const auto &[op, offset] : offsets)
    if (op == alloc)
      return offset;
  return 0;
}

CudaSharedLayout cudaSharedLayout(KernelOp kernel) {
  CudaSharedLayout layout;
  layout.dynamic = ThreadgroupAllocOp::totalBytes(kernel) > kStaticLimit;
  if (!layout.dynamic)
    return layout;
  uint64_t end = 0;
  for (auto alloc : kernel.getBody().front().getOps<ThreadgroupAllocOp>()) {
    uint64_t bytes = alloc.getPaddedBytes();
    uint64_t at = llvm::alignTo(end, ThreadgroupAllocOp::kAlignment);
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
