//===- CudaSharedMemory.h - Where threadgroup arrays live on CUDA -*- C++ -*-===//
//
// CUDA gives a block at most 48 KiB of static __shared__ memory; beyond that
// (up to the device's opt-in limit, 227 KiB on sm_90) the memory must be
// dynamic: one `extern __shared__` array sized at launch, which the runtime
// allows with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES). A kernel
// whose threadgroup arrays need more than 48 KiB carves them out of dynamic
// shared memory, each on a 16-byte boundary as the static arrays are.
//
// Arrays of whole KiB from 8 KiB on (tiles of a product) start on a
// 1024-byte boundary, where Hopper's 128-byte swizzle pattern repeats
// (wgmma reads tiles in place), unless the padding this may cost could pass
// the limit (48 KiB static, 227 KiB dynamic).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_TARGET_CUDA_CUDASHAREDMEMORY_H
#define ENIGMA_LIB_TARGET_CUDA_CUDASHAREDMEMORY_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include <cstdint>
#include <vector>

namespace enigma {

struct CudaSharedLayout {
  /// False: every array is a static __shared__ array.
  bool dynamic = false;
  /// Bytes of dynamic shared memory the launch passes (0 when static).
  uint64_t bytes = 0;
  /// Byte offset of each threadgroup_alloc in the dynamic array.
  std::vector<std::pair<mlir::Operation *, uint64_t>> offsets;

  /// Whether the large arrays are on 1024-byte boundaries.
  bool alignsLarge = false;

  uint64_t offsetOf(mlir::Operation *alloc) const;
  /// Whether an array of `bytes` is one that may be aligned to 1024 bytes.
  static bool isLarge(uint64_t bytes) {
    return bytes >= 8 * 1024 && bytes % kLargeAlignment == 0;
  }
  static constexpr uint64_t kLargeAlignment = 1024;
  /// Static __shared__ memory CUDA allows a block.
  static constexpr uint64_t kStaticLimit = 48 * 1024;
  /// What an sm_90 block may opt in to (the verifier's limit).
  static constexpr uint64_t kDeviceLimit = 227 * 1024;
};

CudaSharedLayout cudaSharedLayout(KernelOp kernel);

/// The name of the dynamic shared array in the CUDA text.
inline constexpr const char *kCudaDynamicShared = "enigma_dynamic_shared";

} // namespace enigma

#endif
