//===- LayoutAlgebra.cpp - Composition, complement, divide, product --------===//
//
// Follows the algorithms of NVIDIA CuTe (cute/layout.hpp) on flattened
// (shape, stride) modes; the comments name the CuTe step each part mirrors.
// Every integer is treated as CuTe treats static integers, so results (and
// their printed form) match CuTe's published examples.
//
//===----------------------------------------------------------------------===//
#include "enigma/Layout/LayoutAlgebra.h"

#include "enigma/Support/Error.h"

#include <algorithm>
#include <numeric>

namespace enigma::layout {

namespace {

struct Mode {
  int64_t shape;
  int64_t stride;
};

std::vector<Mode> flatModes(const Layout &layout) {
  std::vector<int64_t> shapes = leaves(layout.shape());
  std::vector<int64_t> strides = leaves(layout.stride());
  std::vector<Mode> modes;
  for (size_t i = 0; i < shapes.size(); ++i)
    modes.push_back({shapes[i], strides[i]});
  return modes;
}

bool divides(int64_t a, int64_t b) { return a != 0 && b % a == 0; }

// CuTe's bw_coalesce: folds `modes` (back to front) onto the trailing mode
// `last`, dropping extent-1 modes and merging contiguous neighbours.
Layout backwardCoalesce(const std::vector<Mode> &modes, Mode last) {
  std::vector<Mode> out; // reversed
  Mode current = last;
  for (size_t k = modes.size(); k-- > 0;) {
    const Mode &m = modes[k];
    if (m.shape == 1)
      continue;
    if (current.shape == 1) {
      current = m;
    } else if (m.shape * m.stride == current.stride) {
      current = {m.shape * current.shape, m.stride};
    } else {
      out.push_back(current);
      current = m;
    }
  }
  if (out.empty())
    return current.shape == 1 ? Layout(1, 0)
                              : Layout(current.shape, current.stride);
  out.push_back(current);
  std::reverse(out.begin(), out.end());
  std::vector<IntTuple> shape, stride;
  for (const Mode &m : out) {
    shape.emplace_back(m.shape);
    stride.emplace_back(m.stride);
  }
  return Layout(IntTuple::tuple(std::move(shape)),
                IntTuple::tuple(std::move(stride)));
}

std::string describe(const Layout &a, const Layout &b) {
  return a.str() + " o " + b.str();
}

// A o (s:d) for a coalesced A (CuTe's composition_impl, integral rhs).
Layout composeWithLeaf(const Layout &a, const Layout &original, int64_t s,
                       int64_t d) {
  if (d == 0)
    return Layout(s, 0);
  if (a.shape().isLeaf())
    return Layout(s, d * a.stride().value());
  std::vector<Mode> modes = flatModes(a);
  Mode lastA = modes.back();
  modes.pop_back();
  auto fail = [&](const std::string &why) -> Layout {
    throw EnigmaError("composition " + describe(original, Layout(s, d)) +
                      ": " + why);
  };
  // Divide out the stride d from A's leading modes.
  int64_t restStride = d;
  for (Mode &m : modes) {
    int64_t a0 = m.shape;
    if (divides(restStride, a0)) {
      m.shape = a0 / restStride;
      restStride = 1;
    } else if (divides(a0, restStride)) {
      m.shape = 1;
      restStride /= a0;
    } else if (s > 1) {
      return fail("stride " + std::to_string(restStride) +
                  " and the extent " + std::to_string(a0) +
                  " of the left layout do not divide one another");
    } else {
      return Layout(1, 0);
    }
    m.stride *= a0 / m.shape;
  }
  // Keep the first s elements of what is left.
  int64_t restShape = s;
  for (Mode &m : modes) {
    int64_t kept = std::min(m.shape, restShape);
    if (m.shape < restShape && !divides(m.shape, restShape))
      return fail("the extent " + std::to_string(m.shape) +
                  " of the left layout does not divide the remaining size " +
                  std::to_string(restShape));
    restShape = m.shape >= restShape ? 1 : restShape / m.shape;
    m.shape = kept;
  }
  return backwardCoalesce(modes, {restShape, restStride * lastA.stride});
}

// Splits a layout divided by `tiler` into its tile modes and rest modes
// (CuTe's tile_unzip): by-mode tilers recurse, untiled modes join the rest.
std::pair<Layout, Layout> unzip(const Layout &divided, const Tiler &tiler) {
  if (tiler.isLayout())
    return {divided.mode(0), divided.mode(1)};
  std::vector<Layout> tiles, rests;
  for (size_t i = 0; i < divided.rank(); ++i) {
    if (i < tiler.rank()) {
      auto [tile, rest] = unzip(divided.mode(i), tiler.modes()[i]);
      tiles.push_back(tile);
      rests.push_back(rest);
    } else {
      rests.push_back(divided.mode(i));
    }
  }
  return {makeLayout(tiles), makeLayout(rests)};
}

void checkTilerRank(const char *what, const Layout &a, const Tiler &tiler) {
  if (tiler.rank() > a.rank())
    throw EnigmaError(std::string(what) + ": the by-mode tiler has " +
                      std::to_string(tiler.rank()) + " modes but the layout " +
                      a.str() + " has only " + std::to_string(a.rank()));
}

// The layout with `rank` top-level modes: extra modes are 1:0.
std::vector<Layout> paddedModes(const Layout &layout, size_t rank) {
  std::vector<Layout> modes;
  for (size_t i = 0; i < layout.rank(); ++i)
    modes.push_back(layout.mode(i));
  while (modes.size() < rank)
    modes.emplace_back(1, 0);
  return modes;
}

// Shared by blocked and raked products: mode i pairs a_i with product_i.
Layout interleavedProduct(const Layout &a, const Layout &b, bool blockFirst) {
  size_t rank = std::max(a.rank(), b.rank());
  if (rank == 1 && a.shape().isLeaf() && b.shape().isLeaf()) {
    Layout p = logicalProduct(a, b);
    return blockFirst ? p : makeLayout({p.mode(1), p.mode(0)});
  }
  Layout paddedA = makeLayout(paddedModes(a, rank));
  Layout paddedB = makeLayout(paddedModes(b, rank));
  Layout tiles = logicalProduct(paddedA, paddedB).mode(1);
  std::vector<Layout> modes;
  for (size_t i = 0; i < rank; ++i)
    modes.push_back(blockFirst ? makeLayout({paddedA.mode(i), tiles.mode(i)})
                               : makeLayout({tiles.mode(i), paddedA.mode(i)}));
  return makeLayout(modes);
}

// CuTe's upcast<N> / downcast<N> of one leaf mode.
Mode upcastMode(Mode m, int64_t n) {
  if (m.stride == 0)
    return m;
  auto shapeDiv = [](int64_t x, int64_t y) -> int64_t {
    if (!divides(y, x) && !divides(x, y))
      throw EnigmaError("recast_layout: " + std::to_string(x) + " and " +
                        std::to_string(y) + " do not divide one another");
    return x / y != 0 ? x / y : 1;
  };
  return {shapeDiv(m.shape, shapeDiv(n, m.stride)), shapeDiv(m.stride, n)};
}

Mode downcastMode(Mode m, int64_t n) {
  if (m.stride == 1)
    return {m.shape * n, 1};
  return {m.shape, m.stride * n};
}

Layout transformLeaves(const Layout &layout, Mode (*f)(Mode, int64_t),
                       int64_t n) {
  std::vector<Mode> modes = flatModes(layout);
  std::vector<int64_t> shapes, strides;
  for (const Mode &m : modes) {
    Mode r = f(m, n);
    shapes.push_back(r.shape);
    strides.push_back(r.stride);
  }
  return Layout(unflattenLike(shapes, layout.shape()),
                unflattenLike(strides, layout.stride()));
}

} // namespace

Tiler Tiler::byMode(std::vector<Tiler> modes) {
  Tiler t;
  t.modes_ = std::move(modes);
  return t;
}

Tiler Tiler::fromShape(const IntTuple &shape) {
  if (shape.isLeaf())
    return Tiler(Layout(shape));
  std::vector<Tiler> modes;
  for (const IntTuple &e : shape.elements())
    modes.push_back(fromShape(e));
  return byMode(std::move(modes));
}

Layout composition(const Layout &a, const Layout &b) {
  // Right-distributive over B's modes, which keeps B's shape structure.
  if (!b.shape().isLeaf()) {
    std::vector<Layout> modes;
    for (size_t i = 0; i < b.rank(); ++i)
      modes.push_back(composition(a, b.mode(i)));
    return makeLayout(modes);
  }
  return composeWithLeaf(coalesce(a), a, b.shape().value(),
                         b.stride().value());
}

Layout composition(const Layout &a, const Tiler &tiler) {
  if (tiler.isLayout())
    return composition(a, tiler.layout());
  checkTilerRank("composition", a, tiler);
  std::vector<Layout> modes;
  for (size_t i = 0; i < a.rank(); ++i)
    modes.push_back(i < tiler.rank() ? composition(a.mode(i), tiler.modes()[i])
                                     : a.mode(i));
  return makeLayout(modes);
}

Layout complement(const Layout &layout, int64_t cosize) {
  if (cosize < 1)
    throw EnigmaError("complement: cosize " + std::to_string(cosize) +
                      " must be at least 1");
  // CuTe's filter: drop stride-0 and extent-1 modes, then coalesce.
  std::vector<Mode> modes;
  for (const Mode &m : flatModes(coalesce(layout)))
    if (m.stride != 0 && m.shape != 1)
      modes.push_back(m);
  if (modes.empty())
    return coalesce(Layout(cosize));
  std::stable_sort(modes.begin(), modes.end(), [](const Mode &x, const Mode &y) {
    return x.stride < y.stride || (x.stride == y.stride && x.shape < y.shape);
  });
  std::vector<Mode> result;
  int64_t current = 1;
  for (const Mode &m : modes) {
    if (m.stride < current)
      throw EnigmaError("complement: layout " + layout.str() +
                        " is not injective (its modes overlap)");
    if (m.stride % current != 0)
      throw EnigmaError("complement: layout " + layout.str() +
                        " has stride " + std::to_string(m.stride) +
                        " not divisible by " + std::to_string(current) +
                        ", the extent its smaller modes cover");
    result.push_back({m.stride / current, current});
    current = m.shape * m.stride;
  }
  int64_t rest = (cosize + current - 1) / current;
  return backwardCoalesce(result, {rest, current});
}

Layout complement(const Layout &layout) {
  return complement(layout, layout.cosize());
}

Layout rightInverse(const Layout &layout) {
  Layout flat = coalesce(layout);
  std::vector<Mode> modes = flatModes(flat);
  std::vector<int64_t> position = leaves(compactColMajor(flat.shape()));
  std::vector<IntTuple> shape, stride;
  int64_t current = 1;
  for (;;) {
    auto it = std::find_if(modes.begin(), modes.end(), [&](const Mode &m) {
      return m.stride == current && m.shape > 1;
    });
    if (it == modes.end())
      break;
    shape.emplace_back(it->shape);
    stride.emplace_back(position[it - modes.begin()]);
    current = it->shape * it->stride;
  }
  if (shape.empty())
    return Layout(1, 0);
  return coalesce(Layout(IntTuple::tuple(std::move(shape)),
                         IntTuple::tuple(std::move(stride))));
}

Layout logicalDivide(const Layout &a, const Tiler &tiler) {
  if (tiler.isLayout()) {
    const Layout &b = tiler.layout();
    Layout tilesAndRest = makeLayout({b, complement(b, a.size())});
    // CuTe would let the last tile run past the layout; a silent overrun is
    // a wrong result here, so the tile must divide the layout exactly.
    if (tilesAndRest.cosize() != a.size())
      throw EnigmaError("logical_divide: the tile " + b.str() +
                        " does not divide the layout " + a.str() + " of size " +
                        std::to_string(a.size()) + " (tile and rest span " +
                        std::to_string(tilesAndRest.cosize()) + " elements)");
    return composition(a, tilesAndRest);
  }
  checkTilerRank("logical_divide", a, tiler);
  std::vector<Layout> modes;
  for (size_t i = 0; i < a.rank(); ++i)
    modes.push_back(i < tiler.rank() ? logicalDivide(a.mode(i), tiler.modes()[i])
                                     : a.mode(i));
  return makeLayout(modes);
}

/// How the divides and products group the (tile, rest) of an unzipped
/// result: ((tile), (rest)), ((tile), rest0, ...) or (tile0, ..., rest0, ...).
enum class Grouping { Zipped, Tiled, Flat };

static Layout regroup(const Layout &tile, const Layout &rest,
                      Grouping grouping) {
  if (grouping == Grouping::Zipped)
    return makeLayout({tile, rest});
  std::vector<Layout> modes;
  if (grouping == Grouping::Tiled)
    modes.push_back(tile);
  else
    for (size_t i = 0; i < tile.rank(); ++i)
      modes.push_back(tile.mode(i));
  for (size_t i = 0; i < rest.rank(); ++i)
    modes.push_back(rest.mode(i));
  return makeLayout(modes);
}

static Layout divide(const Layout &a, const Tiler &tiler, Grouping grouping) {
  auto [tile, rest] = unzip(logicalDivide(a, tiler), tiler);
  return regroup(tile, rest, grouping);
}

Layout zippedDivide(const Layout &a, const Tiler &tiler) {
  return divide(a, tiler, Grouping::Zipped);
}

Layout tiledDivide(const Layout &a, const Tiler &tiler) {
  return divide(a, tiler, Grouping::Tiled);
}

Layout flatDivide(const Layout &a, const Tiler &tiler) {
  return divide(a, tiler, Grouping::Flat);
}

Layout logicalProduct(const Layout &a, const Layout &b) {
  return makeLayout(
      {a, composition(complement(a, a.size() * b.cosize()), b)});
}

/// logicalProduct mode by mode for a by-mode tiler (modes past the tiler's
/// are kept), else of the whole layout.
static Layout logicalProductOf(const Layout &a, const Tiler &tiler) {
  if (tiler.isLayout())
    return logicalProduct(a, tiler.layout());
  checkTilerRank("logical_product", a, tiler);
  std::vector<Layout> modes;
  for (size_t i = 0; i < a.rank(); ++i)
    modes.push_back(i < tiler.rank()
                        ? logicalProductOf(a.mode(i), tiler.modes()[i])
                        : a.mode(i));
  return makeLayout(modes);
}

static Layout product(const Layout &a, const Tiler &tiler,
                      Grouping grouping) {
  auto [block, rest] = unzip(logicalProductOf(a, tiler), tiler);
  return regroup(block, rest, grouping);
}

Layout zippedProduct(const Layout &a, const Tiler &tiler) {
  return product(a, tiler, Grouping::Zipped);
}

Layout tiledProduct(const Layout &a, const Tiler &tiler) {
  return product(a, tiler, Grouping::Tiled);
}

Layout flatProduct(const Layout &a, const Tiler &tiler) {
  return product(a, tiler, Grouping::Flat);
}

Layout blockedProduct(const Layout &a, const Layout &b) {
  return interleavedProduct(a, b, /*blockFirst=*/true);
}

Layout rakedProduct(const Layout &a, const Layout &b) {
  return interleavedProduct(a, b, /*blockFirst=*/false);
}

Layout recastLayout(int64_t newBits, int64_t oldBits, const Layout &layout) {
  if (newBits < 1 || oldBits < 1)
    throw EnigmaError("recast_layout: element sizes must be positive bit "
                      "counts, got " + std::to_string(newBits) + " and " +
                      std::to_string(oldBits));
  int64_t g = std::gcd(newBits, oldBits);
  int64_t up = newBits / g, down = oldBits / g;
  Layout result = layout;
  if (up != 1)
    result = transformLeaves(result, upcastMode, up);
  if (down != 1)
    result = transformLeaves(result, downcastMode, down);
  return result;
}

TVLayout makeLayoutTV(const Layout &thr, const Layout &val) {
  Layout tileToTV = rakedProduct(thr, val);
  Layout tv = composition(rightInverse(tileToTV),
                          Layout(makeTuple(thr.size(), val.size())));
  return {productEach(tileToTV.shape()), tv};
}

} // namespace enigma::layout
