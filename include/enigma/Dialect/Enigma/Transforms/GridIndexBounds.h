//===- GridIndexBounds.h - Indices that grow with the grid -------*- C++ -*-===//
//
// The analysis behind pre-dispatch out-of-bounds detection: it finds the
// buffer accesses that every thread makes at an index that is an affine
// function of thread_position_in_grid with constant, non-negative
// coefficients, such as `A[gid]` or `C[gid * 2 + 1]`: directly in the
// kernel body, directly in a loop there with constant bounds (judged at its
// last iteration), or directly under one guard `if thread_position_in_grid[d]
// < n` (n a scalar parameter or a constant; every thread below min(grid, n)
// along d makes them, judged with n's value). From the grid (and n) the
// runtime then knows the largest index touched and can refuse a dispatch
// whose buffers are too small before it runs. Anything else is left alone,
// so a correct kernel is never rejected: other conditions and loops, a
// select, or an index that depends on data or scalars.
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
