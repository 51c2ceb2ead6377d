//===- GridIndexBounds.h - Indices that grow with the grid -------*- C++ -*-===//
//
// The analysis behind pre-dispatch out-of-bounds detection: it finds the
// buffer accesses that every thread makes (directly in the kernel body, not
// under an if or loop) at an index that is an affine function of
// thread_position_in_grid with constant, non-negative coefficients, such as
// `A[gid]` or `C[gid * 2 + 1]`. From the grid alone the runtime then knows
// the largest index touched and can refuse a dispatch whose buffers are too
// small before it runs. So it does for accesses directly in a loop with
// constant bounds there (judged at the last iteration), and for accesses
// directly inside one
// guard of the form `if thread_position_in_grid[d] < n` (n a scalar
// parameter or a constant): every thread below min(grid, n) along d makes
// them, so the runtime judges them with n's value. Anything else is left
// alone, so a correct kernel is never rejected: other conditions and
// loops, a select, or an index that depends on data or scalars.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_TRANSFORMS_GRIDINDEXBOUNDS_H
#define ENIGMA_DIALECT_ENIGMA_TRANSFORMS_GRIDINDEXBOUNDS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Support/GridIndexBound.h"

#include <vector>

namespace enigma {

/// The unconditional and position-guarded grid-affine accesses of
/// `kernel`, in program order.
std::vector<GridIndexBound> findGridAffineAccesses(KernelOp kernel);

} // namespace enigma

#endif
