//===- LayoutBindings.cpp - The layout algebra for enigma.Layout -----------===//
//
// Layouts cross the boundary as (shape, stride) pairs of nested Python
// tuples of ints; python/enigma/_layout.py wraps them in its Layout class
// (and evaluates coordinates itself, so traced values work too) and
// python/enigma/_layout_algebra.py calls the algebra. A tiler is such a
// pair, or a list of tilers applied mode by mode.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Layout/Swizzle.h"
#include "enigma/Support/Error.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;
using namespace nb::literals;
using enigma::layout::IntTuple;
using enigma::layout::Layout;
using enigma::layout::Tiler;

namespace enigma::python {
namespace {

IntTuple toIntTuple(nb::handle h) {
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    std::vector<IntTuple> elements;
    for (nb::handle e : h)
      elements.push_back(toIntTuple(e));
    return IntTuple::tuple(std::move(elements));
  }
  if (nb::isinstance<nb::int_>(h) && !nb::isinstance<nb::bool_>(h))
    return nb::cast<int64_t>(h);
  throw EnigmaError("expected an int or a tuple of ints, got " +
                    std::string(nb::str(nb::repr(h)).c_str()));
}

nb::object toPython(const IntTuple &t) {
  if (t.isLeaf())
    return nb::int_(t.value());
  nb::list out;
  for (const IntTuple &e : t.elements())
    out.append(toPython(e));
  return nb::tuple(out);
}

Layout toLayout(nb::handle pair) {
  nb::tuple t = nb::cast<nb::tuple>(pair);
  if (t.size() != 2)
    throw EnigmaError("internal: a layout crosses as (shape, stride)");
  return Layout(toIntTuple(t[0]), toIntTuple(t[1]));
}

nb::tuple toPython(const Layout &l) {
  return nb::make_tuple(toPython(l.shape()), toPython(l.stride()));
}

Tiler toTiler(nb::handle h) {
  if (nb::isinstance<nb::list>(h)) {
    std::vector<Tiler> modes;
    for (nb::handle e : h)
      modes.push_back(toTiler(e));
    return Tiler::byMode(std::move(modes));
  }
  return Tiler(toLayout(h));
}

} // namespace

void bindLayout(nb::module_ &m) {
  m.def(
      "layout_make",
      [](nb::handle shape, nb::handle stride) {
        IntTuple s = toIntTuple(shape);
        return toPython(stride.is_none() ? Layout(s)
                                         : Layout(s, toIntTuple(stride)));
      },
      "shape"_a, "stride"_a.none(),
      "Checks and normalises a layout; the stride defaults to column-major");
  m.def(
      "layout_str", [](nb::handle l) { return toLayout(l).str(); }, "layout"_a);
  m.def(
      "layout_cosize", [](nb::handle l) { return toLayout(l).cosize(); },
      "layout"_a);
  m.def(
      "layout_ordered",
      [](nb::handle shape, nb::handle order) {
        return toPython(layout::makeOrderedLayout(toIntTuple(shape),
                                                  toIntTuple(order)));
      },
      "shape"_a, "order"_a);
  m.def(
      "layout_coalesce",
      [](nb::handle l, nb::handle profile) {
        Layout layout = toLayout(l);
        return toPython(profile.is_none()
                            ? layout::coalesce(layout)
                            : layout::coalesce(layout, toIntTuple(profile)));
      },
      "layout"_a, "profile"_a.none());
  m.def(
      "layout_complement",
      [](nb::handle l, nb::handle cosize) {
        Layout layout = toLayout(l);
        return toPython(cosize.is_none()
                            ? layout::complement(layout)
                            : layout::complement(layout, nb::cast<int64_t>(cosize)));
      },
      "layout"_a, "cosize"_a.none());
  m.def(
      "layout_right_inverse",
      [](nb::handle l) { return toPython(layout::rightInverse(toLayout(l))); },
      "layout"_a);
  // Functions of (layout, tiler).
  using TilerFn = Layout (*)(const Layout &, const Tiler &);
  auto bindTiled = [&](const char *name, TilerFn fn) {
    m.def(
        name,
        [fn](nb::handle l, nb::handle tiler) {
          return toPython(fn(toLayout(l), toTiler(tiler)));
        },
        "layout"_a, "tiler"_a);
  };
  bindTiled("layout_composition", &layout::composition);
  bindTiled("layout_logical_divide", &layout::logicalDivide);
  bindTiled("layout_zipped_divide", &layout::zippedDivide);
  bindTiled("layout_tiled_divide", &layout::tiledDivide);
  bindTiled("layout_flat_divide", &layout::flatDivide);
  bindTiled("layout_zipped_product", &layout::zippedProduct);
  bindTiled("layout_tiled_product", &layout::tiledProduct);
  bindTiled("layout_flat_product", &layout::flatProduct);
  // Functions of two layouts.
  using PairFn = Layout (*)(const Layout &, const Layout &);
  auto bindPair = [&](const char *name, PairFn fn) {
    m.def(
        name,
        [fn](nb::handle a, nb::handle b) {
          return toPython(fn(toLayout(a), toLayout(b)));
        },
        "a"_a, "b"_a);
  };
  bindPair("layout_logical_product", &layout::logicalProduct);
  bindPair("layout_blocked_product", &layout::blockedProduct);
  bindPair("layout_raked_product", &layout::rakedProduct);
  m.def(
      "layout_recast",
      [](int64_t newBits, int64_t oldBits, nb::handle l) {
        return toPython(layout::recastLayout(newBits, oldBits, toLayout(l)));
      },
      "new_bits"_a, "old_bits"_a, "layout"_a);
  m.def(
      "layout_tv",
      [](nb::handle thr, nb::handle val) {
        layout::TVLayout tv = layout::makeLayoutTV(toLayout(thr), toLayout(val));
        return nb::make_tuple(toPython(tv.tiler), toPython(tv.layout));
      },
      "thr"_a, "val"_a);
  m.def(
      "swizzle_masks",
      [](int bits, int base, int shift) {
        layout::Swizzle s(bits, base, shift);
        return nb::make_tuple(s.yyyMask(), s.zzzMask());
      },
      "bits"_a, "base"_a, "shift"_a,
      "Checks Swizzle<B,M,S>; returns its (read, flipped) bit masks");
}

} // namespace enigma::python
