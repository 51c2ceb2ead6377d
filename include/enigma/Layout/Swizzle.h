//===- Swizzle.h - CuTe's Swizzle<B,M,S> and swizzled layouts ----*- C++ -*-===//
//
// A swizzle XORs B bits of an offset, taken S bits above bit M, into the B
// bits at M: offset ^ ((offset & yyyMask) >> S). Applied after a layout it
// spreads a tile over memory banks. A SwizzledLayout is CuTe's ComposedLayout
// of a swizzle, an offset and a layout: c -> swizzle(offset + layout(c)).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LAYOUT_SWIZZLE_H
#define ENIGMA_LAYOUT_SWIZZLE_H

#include "enigma/Layout/LayoutAlgebra.h"

#include <cstdint>
#include <string>

namespace enigma::layout {

class [[gnu::visibility("default")]] Swizzle {
public:
  /// Throws EnigmaError unless bits >= 0, base >= 0, |shift| >= bits and the
  /// masks fit in 63 bits.
  Swizzle(int bits, int base, int shift);

  int bits() const { return bits_; }
  int base() const { return base_; }
  int shift() const { return shift_; }
  /// The B bits that are read (the higher ones for shift > 0).
  int64_t yyyMask() const;
  /// The B bits that are flipped.
  int64_t zzzMask() const;
  int64_t operator()(int64_t offset) const;
  /// CuTe notation: Sw<3,4,3>.
  std::string str() const;

  friend bool operator==(const Swizzle &, const Swizzle &) = default;

private:
  int bits_, base_, shift_;
};

/// c -> swizzle(offset + layout(c)).
class [[gnu::visibility("default")]] SwizzledLayout {
public:
  SwizzledLayout(Swizzle swizzle, int64_t offset, Layout layout);

  const Swizzle &swizzle() const { return swizzle_; }
  int64_t offset() const { return offset_; }
  const Layout &layout() const { return layout_; }
  int64_t operator()(int64_t index) const;
  int64_t operator()(const IntTuple &coord) const;
  /// CuTe notation: Sw<3,4,3> o 0 o (8,64):(64,1).
  std::string str() const;

private:
  Swizzle swizzle_;
  int64_t offset_;
  Layout layout_;
};

/// The swizzle applied after `tiler` composed into the inner layout: the
/// swizzle stays outermost, as CuTe composes a ComposedLayout.
[[gnu::visibility("default")]] SwizzledLayout
composition(const SwizzledLayout &a, const Tiler &tiler);

} // namespace enigma::layout

#endif
