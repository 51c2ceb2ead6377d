//===- GridIndexBounds.h - Indices that grow with the grid -------*- C++ -*-===//
//
// The analysis behind pre-dispatch out-of-bounds detection: it finds the
// buffer accesses that every thread makes (directly in the kernel body, not
// under an if or loop) at an index that is an affine function of
// thread_position_in_grid with constant, non-negative coefficients, such as
// `A[gid]` or `C[gid * 2 + 1]`. From the grid alone the runtime then knows
// the largest index touched and can refuse a dispatch whose buffers are too
// small before it runs. The same holds for accesses directly inside one
// guard of the form `if thread_position_in_grid[d] < n` (n a scalar
// parameter or a constant): every thread below min(grid, n) along d makes
// them, so the runtime judges them with n's value. Anything else is left
// alone, so a correct kernel is never rejected: other conditions, loops, a
// select, or an index that depends on data or scalars.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_TRANSFORMS_GRIDINDEXBOUNDS_H
#define ENIGMA_DIALECT_ENIGMA_TRANSFORMS_GRIDINDEXBOUNDS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace enigma {

/// index = sum(coefficient[d] * thread_position_in_grid[d]) + offset,
/// evaluated in `valueBits`-wide integers (read as signed when
/// `signedIndex`), touching `extent` elements of buffer parameter `param`.
struct GridAffineAccess {
  unsigned param = 0;
  uint64_t coefficient[3] = {0, 0, 0};
  uint64_t offset = 0;
  unsigned extent = 1;
  unsigned valueBits = 64;
  bool signedIndex = false;
  std::string access;   // "load", "store", ...
  std::string location; // "file:line" or ""
  /// A guarded access runs only where position[dim] < the limit, compared
  /// in `bits`-wide integers (signed when `isSigned`); the limit is scalar
  /// parameter `param`, or the constant `limit` when that is -1.
  struct Guard {
    int dim = -1; // -1: unconditional
    int param = -1;
    uint64_t limit = 0;
    unsigned bits = 32;
    bool isSigned = false;
  } guard;
};

/// The unconditional and position-guarded grid-affine accesses of
/// `kernel`, in program order.
std::vector<GridAffineAccess> findGridAffineAccesses(KernelOp kernel);

} // namespace enigma

#endif
