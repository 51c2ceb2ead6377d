//===- GridIndexBound.h - Grid-affine accesses, judged at launch -*- C++ -*-===//
//
// What the compiler's grid-index analysis (GridIndexBounds.h) finds and the
// runtime checks before every launch (BoundsCheck.h): shared by both
// layers, so it needs neither MLIR nor a runtime.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_GRIDINDEXBOUND_H
#define ENIGMA_SUPPORT_GRIDINDEXBOUND_H

#include <cstdint>
#include <string>

namespace enigma {

/// An access every thread makes (unconditionally, or every thread that
/// passes a `position < limit` guard) at an index that is an affine
/// function of thread_position_in_grid:
///   index = sum(coefficient[d] * position[d]) + offset, touching `extent`
/// elements. The Dispatcher checks the largest such index against the
/// bound buffer before launching. The index is computed in `valueBits`
/// wide integers (and read as signed when `signedIndex`); a dispatch for
/// which it would wrap is not judged.
struct GridIndexBound {
  unsigned param = 0;
  uint64_t coefficient[3] = {0, 0, 0};
  uint64_t offset = 0;
  unsigned extent = 1;
  unsigned valueBits = 64;
  bool signedIndex = false;
  std::string access;   // "load", "store", ...
  std::string location; // "file:line" or ""
  /// Guarded accesses run only where thread_position_in_grid[dim] < the
  /// limit (`bits`-wide, signed when `isSigned`): scalar parameter `param`,
  /// or the constant `limit` when that is -1.
  struct Guard {
    int dim = -1; // -1: unconditional
    int param = -1;
    uint64_t limit = 0;
    unsigned bits = 32;
    bool isSigned = false;
  } guard;
};

} // namespace enigma

#endif
