//===- Layout.h - CuTe layouts: (shape, stride) functions --------*- C++ -*-===//
//
// A Layout maps a coordinate inside its shape to an integer offset: the inner
// product of the (hierarchical) coordinate with the stride. Shape and stride
// are congruent IntTuples; every shape extent is >= 1 and every stride >= 0.
// A single integer index is a colexicographic coordinate (first mode
// fastest), so Layout((4,8)) is column-major. Notation: (4,8):(1,4).
//
// The algebra over layouts (composition, complement, divide, product, ...)
// is declared in LayoutAlgebra.h. Invalid arguments throw EnigmaError.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LAYOUT_LAYOUT_H
#define ENIGMA_LAYOUT_LAYOUT_H

#include "enigma/Layout/IntTuple.h"

#include <string>
#include <vector>

namespace enigma::layout {

class [[gnu::visibility("default")]] Layout {
public:
  /// The compact column-major layout of `shape` (strides 1, s0, s0*s1, ...).
  explicit Layout(IntTuple shape);
  /// Throws EnigmaError unless shape and stride are congruent, extents >= 1
  /// and strides >= 0.
  Layout(IntTuple shape, IntTuple stride);

  const IntTuple &shape() const { return shape_; }
  const IntTuple &stride() const { return stride_; }
  /// Top-level modes (1 for an integral shape).
  size_t rank() const { return shape_.rank(); }
  /// Nesting depth of the shape (0 for an integral shape).
  int depth() const { return shape_.depth(); }
  /// Number of coordinates: the product of the shape.
  int64_t size() const { return product(shape_); }
  /// Size of one top-level mode.
  int64_t size(size_t mode) const { return product(shape_.mode(mode)); }
  /// One past the largest offset: L(size-1) + 1 (strides are >= 0).
  int64_t cosize() const;
  /// Top-level mode i as a layout of its own.
  Layout mode(size_t i) const;

  /// The offset of the colexicographic index `index` in [0, size).
  int64_t operator()(int64_t index) const;
  /// The offset of a coordinate: an integer (a 1-D index), or a tuple of the
  /// layout's rank whose elements are coordinates of the matching modes.
  int64_t operator()(const IntTuple &coord) const;

  /// CuTe notation: (4,8):(1,4).
  std::string str() const;

  friend bool operator==(const Layout &, const Layout &) = default;

private:
  IntTuple shape_;
  IntTuple stride_;
};

/// The hierarchical coordinate of colexicographic `index` within `shape`.
[[gnu::visibility("default")]] IntTuple indexToCoord(int64_t index,
                                                     const IntTuple &shape);

/// The layout whose modes are the given layouts: makeLayout({a, b}) has
/// shape (a.shape, b.shape) and stride (a.stride, b.stride).
[[gnu::visibility("default")]] Layout
makeLayout(const std::vector<Layout> &modes);

/// A compact layout of `shape` whose modes take strides in the order given by
/// `order` (smallest first; ties by position): makeOrderedLayout((4,8),
/// (1,0)) is (4,8):(8,1). `order` is congruent to `shape`, or matches it at
/// the top level (a nested mode then stays column-major inside).
[[gnu::visibility("default")]] Layout makeOrderedLayout(const IntTuple &shape,
                                                        const IntTuple &order);

/// The same function with the fewest modes: flattened, extent-1 modes
/// dropped, contiguous neighbours merged. (2,(1,6)):(1,(6,2)) -> 12:1.
[[gnu::visibility("default")]] Layout coalesce(const Layout &layout);
/// By-mode coalesce: each top-level mode of `profile` that is a tuple
/// recurses; each leaf of `profile` coalesces the matching mode alone, so the
/// result keeps the profile's rank.
[[gnu::visibility("default")]] Layout coalesce(const Layout &layout,
                                               const IntTuple &profile);

} // namespace enigma::layout

#endif
