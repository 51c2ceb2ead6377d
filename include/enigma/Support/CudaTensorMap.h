//===- CudaTensorMap.h - A tensor map of a CUDA kernel ----------*- C++ -*-===//
//
// What the compiler tells the CUDA runtime about each tensor map a kernel
// compiled with `cuda_tma` takes (docs/design/tma.md); shared by the CUDA
// emitter and KernelArtifact.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_CUDATENSORMAP_H
#define ENIGMA_SUPPORT_CUDATENSORMAP_H

#include <cstdint>

namespace enigma {

/// Maps a kernel may take after its launch shape (CUDA allows 4 KiB of
/// parameters; a map is 128 bytes).
inline constexpr unsigned kMaxCudaTensorMaps = 8;

/// A tensor map the CUDA runtime encodes at each launch for the Tensor
/// Memory Accelerator (docs/design/tma.md): buffer parameter `param` viewed
/// as rows of `pitch` elements (a scalar parameter's value, or
/// `pitchConstant` when `pitchParam` is -1), copied in boxes of
/// `boxRows x boxCols` elements of `elementBytes`, with the 128-byte
/// swizzle or none. The kernel takes each map as a parameter after the
/// EnigmaCudaLaunch, then a mask of the maps that could be encoded.
struct CudaTensorMap {
  unsigned param = 0;
  int pitchParam = -1;
  uint64_t pitchConstant = 0;
  /// The matrix's rows and columns (a scalar parameter's value, else the
  /// constant; 0 and -1: 2^31 rows of `pitch` columns), for the copies of
  /// pipelines (enigma.stage_copy): the TMA fills what lies outside with
  /// zeros.
  int rowsParam = -1, colsParam = -1;
  uint64_t rowsConstant = 0, colsConstant = 0;
  unsigned boxRows = 0, boxCols = 0, elementBytes = 0;
  bool swizzle128 = false;
  bool operator==(const CudaTensorMap &) const = default;
};

} // namespace enigma

#endif
