//===- MatrixExtent.h - Buffers read as matrices, judged at launch -*- C++ -*-===//
//
// A kernel part that reads or writes a buffer as a row-major matrix whose
// sides are scalar parameters (gemm_block's A, B and C) records it on the
// kernel (enigma.matrix_extents); the runtime checks the bound buffer before
// every launch (BoundsCheck.h). Shared by the compiler and the runtime, so it
// needs neither MLIR nor a runtime.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_MATRIXEXTENT_H
#define ENIGMA_SUPPORT_MATRIXEXTENT_H

#include <cstdint>
#include <string>

namespace enigma {

/// Buffer parameter `param` holds a `rows x cols` matrix, rows `pitch`
/// elements apart: it needs `(rows - 1) * pitch + cols` elements (none when
/// a side is 0). Each side is a constant or the value of a scalar parameter,
/// divided (rounding up) by `divisor` and multiplied by `scale`: the blocks
/// of a side (ceil(m / 64)) or a multiple of it (split_k m).
struct MatrixExtent {
  struct Side {
    int param = -1;       // scalar parameter index, or -1 for `value`
    uint64_t value = 0;   // the constant
    uint64_t divisor = 1; // ceil(base / divisor) * scale
    uint64_t scale = 1;
  };
  unsigned param = 0;
  Side rows, cols, pitch;
  /// What touches it, for the message: "gemm_block reads A as an m x k
  /// matrix (pitch lda)".
  std::string what;
};

} // namespace enigma

#endif
