//===- Layout.cpp - Layouts, evaluation, construction, coalesce ------------===//
#include "enigma/Layout/Layout.h"

#include "enigma/Support/Error.h"

#include <algorithm>
#include <numeric>

namespace enigma::layout {

namespace {

void checkShapeAndStride(const IntTuple &shape, const IntTuple &stride) {
  if (!congruent(shape, stride))
    throw EnigmaError("layout shape " + shape.str() + " and stride " +
                      stride.str() + " are not congruent (same nesting)");
  for (int64_t extent : leaves(shape))
    if (extent < 1)
      throw EnigmaError("layout shape " + shape.str() +
                        " has an extent below 1");
  for (int64_t step : leaves(stride))
    if (step < 0)
      throw EnigmaError("layout stride " + stride.str() +
                        " has a negative entry (strides must be >= 0)");
}

// Offset of `coord` in the (sub)layout shape:stride; CuTe's crd2idx with
// range checks, since a silently wrapped coordinate would be a wrong result.
int64_t offsetOf(const IntTuple &coord, const IntTuple &shape,
                 const IntTuple &stride) {
  if (!coord.isLeaf()) {
    if (shape.isLeaf() || coord.rank() != shape.rank())
      throw EnigmaError("coordinate " + coord.str() + " has rank " +
                        std::to_string(coord.rank()) + " but shape " +
                        shape.str() + " has rank " +
                        std::to_string(shape.rank()));
    int64_t offset = 0;
    for (size_t i = 0; i < coord.rank(); ++i)
      offset += offsetOf(coord.mode(i), shape.mode(i), stride.mode(i));
    return offset;
  }
  int64_t c = coord.value();
  int64_t extent = product(shape);
  if (c < 0 || c >= extent)
    throw EnigmaError("coordinate " + std::to_string(c) +
                      " is out of range [0, " + std::to_string(extent) +
                      ") of shape " + shape.str());
  if (shape.isLeaf())
    return c * stride.value();
  int64_t offset = 0;
  for (size_t i = 0; i < shape.rank(); ++i) {
    int64_t modeSize = product(shape.mode(i));
    offset += offsetOf(c % modeSize, shape.mode(i), stride.mode(i));
    c /= modeSize;
  }
  return offset;
}

IntTuple coordOf(int64_t index, const IntTuple &shape) {
  if (shape.isLeaf())
    return index;
  std::vector<IntTuple> out;
  for (const IntTuple &mode : shape.elements()) {
    int64_t modeSize = product(mode);
    out.push_back(coordOf(index % modeSize, mode));
    index /= modeSize;
  }
  return IntTuple::tuple(std::move(out));
}

} // namespace

Layout::Layout(IntTuple shape)
    : shape_(std::move(shape)), stride_(compactColMajor(shape_)) {
  checkShapeAndStride(shape_, stride_);
}

Layout::Layout(IntTuple shape, IntTuple stride)
    : shape_(std::move(shape)), stride_(std::move(stride)) {
  checkShapeAndStride(shape_, stride_);
}

int64_t Layout::cosize() const { return (*this)(size() - 1) + 1; }

Layout Layout::mode(size_t i) const {
  return Layout(shape_.mode(i), stride_.mode(i));
}

int64_t Layout::operator()(int64_t index) const {
  return offsetOf(IntTuple(index), shape_, stride_);
}

int64_t Layout::operator()(const IntTuple &coord) const {
  return offsetOf(coord, shape_, stride_);
}

std::string Layout::str() const { return shape_.str() + ":" + stride_.str(); }

IntTuple indexToCoord(int64_t index, const IntTuple &shape) {
  int64_t extent = product(shape);
  if (index < 0 || index >= extent)
    throw EnigmaError("index " + std::to_string(index) +
                      " is out of range [0, " + std::to_string(extent) +
                      ") of shape " + shape.str());
  return coordOf(index, shape);
}

Layout makeLayout(const std::vector<Layout> &modes) {
  std::vector<IntTuple> shape, stride;
  for (const Layout &m : modes) {
    shape.push_back(m.shape());
    stride.push_back(m.stride());
  }
  return Layout(IntTuple::tuple(std::move(shape)),
                IntTuple::tuple(std::move(stride)));
}

// Sort key of each leaf of `shape`: the order value of the `order` leaf that
// covers it (a leaf of `order` may cover a whole nested mode).
static void orderKeys(const IntTuple &shape, const IntTuple &order,
                      std::vector<int64_t> &keys) {
  if (order.isLeaf()) {
    for (size_t i = 0, n = leaves(shape).size(); i < n; ++i)
      keys.push_back(order.value());
    return;
  }
  if (shape.isLeaf() || shape.rank() != order.rank())
    throw EnigmaError("make_ordered_layout: order " + order.str() +
                      " does not match shape " + shape.str());
  for (size_t i = 0; i < shape.rank(); ++i)
    orderKeys(shape.mode(i), order.mode(i), keys);
}

Layout makeOrderedLayout(const IntTuple &shape, const IntTuple &order) {
  std::vector<int64_t> keys;
  orderKeys(shape, order, keys);
  std::vector<int64_t> extents = leaves(shape);
  std::vector<size_t> byOrder(extents.size());
  std::iota(byOrder.begin(), byOrder.end(), 0);
  std::stable_sort(byOrder.begin(), byOrder.end(),
                   [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<int64_t> strides(extents.size());
  int64_t running = 1;
  for (size_t i : byOrder) {
    strides[i] = running;
    running *= extents[i];
  }
  return Layout(shape, unflattenLike(strides, shape));
}

Layout coalesce(const Layout &layout) {
  std::vector<int64_t> shapes = leaves(layout.shape());
  std::vector<int64_t> strides = leaves(layout.stride());
  std::vector<IntTuple> outShape, outStride;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i] == 1)
      continue;
    if (!outShape.empty()) {
      int64_t lastShape = outShape.back().value();
      int64_t lastStride = outStride.back().value();
      if (lastShape * lastStride == strides[i]) {
        outShape.back() = lastShape * shapes[i];
        continue;
      }
    }
    outShape.emplace_back(shapes[i]);
    outStride.emplace_back(strides[i]);
  }
  if (outShape.empty())
    return Layout(1, 0);
  if (outShape.size() == 1)
    return Layout(outShape[0], outStride[0]);
  return Layout(IntTuple::tuple(std::move(outShape)),
                IntTuple::tuple(std::move(outStride)));
}

Layout coalesce(const Layout &layout, const IntTuple &profile) {
  if (profile.isLeaf())
    return coalesce(layout);
  if (profile.rank() > layout.rank())
    throw EnigmaError("coalesce: profile " + profile.str() +
                      " has more modes than layout " + layout.str());
  std::vector<Layout> modes;
  for (size_t i = 0; i < layout.rank(); ++i)
    modes.push_back(i < profile.rank()
                        ? coalesce(layout.mode(i), profile.mode(i))
                        : layout.mode(i));
  return makeLayout(modes);
}

} // namespace enigma::layout
