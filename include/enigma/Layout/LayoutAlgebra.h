//===- LayoutAlgebra.h - Composition, complement, divide, product -*- C++ -*-===//
//
// NVIDIA CuTe's layout algebra over enigma::layout::Layout. Functions that
// take a Tiler accept either one layout (applied to the whole layout) or a
// tuple of tilers applied mode by mode (CuTe's "by-mode" tilers); modes past
// the tiler's rank are left as they are. CuTe's divisibility conditions are
// checked: an inadmissible argument throws EnigmaError naming the function.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LAYOUT_LAYOUTALGEBRA_H
#define ENIGMA_LAYOUT_LAYOUTALGEBRA_H

#include "enigma/Layout/Layout.h"

#include <vector>

namespace enigma::layout {

/// A layout, or a tuple of tilers for the modes of a layout.
class [[gnu::visibility("default")]] Tiler {
public:
  /// A tiler that applies `layout` to a whole layout.
  Tiler(Layout layout) : layout_(std::move(layout)), isLayout_(true) {}
  /// A by-mode tiler: element i applies to mode i.
  static Tiler byMode(std::vector<Tiler> modes);
  /// By-mode tiler of compact layouts: (4,8) tiles mode 0 by 4:1, mode 1 by 8:1.
  static Tiler fromShape(const IntTuple &shape);

  bool isLayout() const { return isLayout_; }
  const Layout &layout() const { return layout_; }
  const std::vector<Tiler> &modes() const { return modes_; }
  size_t rank() const { return isLayout_ ? 1 : modes_.size(); }

private:
  Tiler() : layout_(IntTuple(1)), isLayout_(false) {}
  Layout layout_;
  bool isLayout_;
  std::vector<Tiler> modes_;
};

/// R = A o B: R(c) = A(B(c)) for every coordinate c of B; R has B's shape.
[[gnu::visibility("default")]] Layout composition(const Layout &a,
                                                  const Layout &b);
/// By-mode composition: mode i of `a` composed with tiler mode i.
[[gnu::visibility("default")]] Layout composition(const Layout &a,
                                                  const Tiler &tiler);

/// The layout of the offsets in [0, cosize) that `layout` does not reach,
/// ordered so that (layout, complement) is a bijection onto a contiguous
/// range of at least `cosize` elements. Needs an injective layout whose
/// sorted strides divide each other.
[[gnu::visibility("default")]] Layout complement(const Layout &layout,
                                                 int64_t cosize);
/// complement(layout, layout.cosize()).
[[gnu::visibility("default")]] Layout complement(const Layout &layout);

/// A layout R with layout(R(i)) == i for every i in the largest contiguous
/// range [0, n) of offsets that `layout` reaches from 0.
[[gnu::visibility("default")]] Layout rightInverse(const Layout &layout);

/// A o (B, complement(B, size(A))): ((tile), (rest)).
[[gnu::visibility("default")]] Layout logicalDivide(const Layout &a,
                                                    const Tiler &tiler);
/// logicalDivide with the tile modes gathered first: ((tile0, tile1, ...),
/// (rest0, rest1, ...)).
[[gnu::visibility("default")]] Layout zippedDivide(const Layout &a,
                                                   const Tiler &tiler);
/// Like zippedDivide with the rest modes unpacked: ((tile), rest0, rest1, ...).
[[gnu::visibility("default")]] Layout tiledDivide(const Layout &a,
                                                  const Tiler &tiler);
/// Like zippedDivide with both modes unpacked: (tile0, tile1, ..., rest0,
/// rest1, ...).
[[gnu::visibility("default")]] Layout flatDivide(const Layout &a,
                                                 const Tiler &tiler);

/// (A, complement(A, size(A) * cosize(B)) o B): B copies of A.
[[gnu::visibility("default")]] Layout logicalProduct(const Layout &a,
                                                     const Layout &b);
/// logicalProduct with the block modes gathered first (a by-mode tiler
/// multiplies mode i of `a` by its mode i): ((a0, a1, ...), (rest0, rest1,
/// ...)), as CuTe's zipped_product.
[[gnu::visibility("default")]] Layout zippedProduct(const Layout &a,
                                                    const Tiler &tiler);
/// zippedProduct with the rest modes unpacked: ((a modes), rest0, ...).
[[gnu::visibility("default")]] Layout tiledProduct(const Layout &a,
                                                   const Tiler &tiler);
/// zippedProduct with both modes unpacked: (a0, a1, ..., rest0, ...).
[[gnu::visibility("default")]] Layout flatProduct(const Layout &a,
                                                  const Tiler &tiler);
/// Mode i is (a_i, product_i): tiles of A laid out by B (A varies fastest).
[[gnu::visibility("default")]] Layout blockedProduct(const Layout &a,
                                                     const Layout &b);
/// Mode i is (product_i, a_i): A's elements interleaved across B's tiles.
[[gnu::visibility("default")]] Layout rakedProduct(const Layout &a,
                                                   const Layout &b);

/// The layout of the same memory seen as elements of `newBits` bits instead
/// of `oldBits` bits (CuTe's recast_layout; upcast / downcast by the ratio).
[[gnu::visibility("default")]] Layout recastLayout(int64_t newBits,
                                                   int64_t oldBits,
                                                   const Layout &layout);

/// make_layout_tv's result: the tile's shape and the (thread, value) layout.
struct [[gnu::visibility("default")]] TVLayout {
  IntTuple tiler;
  Layout layout;
};
/// CuTe DSL's make_layout_tv: the tile covered by threads `thr` each holding
/// values `val` (their raked product), and the layout mapping (thread index,
/// value index) to the index of that element in the column-major tile.
[[gnu::visibility("default")]] TVLayout makeLayoutTV(const Layout &thr,
                                                     const Layout &val);

} // namespace enigma::layout

#endif
