//===- CudaProxyFence.h - Where wgmma's proxy fence goes --------*- C++ -*-===//
//
// wgmma reads shared memory through the async proxy, so generic-proxy
// writes to its tiles (cp.async, stores) must be followed by
// `fence.proxy.async` before it. The prelude puts the fence before every
// warpgroup product, which serialises it with the memory operations in
// flight. In kernels whose threadgroup memory is written only by tile
// copies (enigma.copy_tile_async), every write is complete, and visible to
// the writer, at the copy_wait that must precede the product's barrier:
// the fence can go there, once per wait, instead (ENIGMA_FENCE_AT_COPY_WAIT
// in the prelude; docs/design/wgmma.md). Stores to threadgroup arrays that
// no warpgroup product reads (a GEMM's block of partial sums) need no
// fence before the products and do not count.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_TARGET_CUDA_CUDAPROXYFENCE_H
#define ENIGMA_LIB_TARGET_CUDA_CUDAPROXYFENCE_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

namespace enigma {

/// Whether `kernel` has warpgroup products and writes the threadgroup
/// memory they read only through tile copies (an op whose effects are
/// unknown counts as a write to every array it names).
bool cudaFencesAtCopyWait(KernelOp kernel);

} // namespace enigma

#endif
