//===- IntTuple.h - Nested integer tuples (CuTe's IntTuple) ------*- C++ -*-===//
//
// The building block of the layout algebra: an integer or a tuple of
// IntTuples, e.g. 8 or ((2,2),8). Shapes, strides and coordinates are all
// IntTuples. Tuples are ordered colexicographically (the first element varies
// fastest), as in NVIDIA CuTe.
//
// Part of libenigma's public API: no MLIR types here.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LAYOUT_INTTUPLE_H
#define ENIGMA_LAYOUT_INTTUPLE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace enigma::layout {

/// An integer (a leaf) or a tuple of IntTuples (possibly empty).
class [[gnu::visibility("default")]] IntTuple {
public:
  /// A leaf. Implicit so that `Layout(8, 1)` and `{4, 8}` read naturally.
  IntTuple(int64_t value = 0) : value_(value) {}
  /// A tuple of the given elements.
  static IntTuple tuple(std::vector<IntTuple> elements);

  bool isLeaf() const { return leaf_; }
  /// The integer of a leaf; throws EnigmaError for a tuple.
  int64_t value() const;
  /// The elements of a tuple; throws EnigmaError for a leaf.
  const std::vector<IntTuple> &elements() const;
  /// Number of top-level modes: 1 for a leaf.
  size_t rank() const { return leaf_ ? 1 : elements_.size(); }
  /// Mode i: a leaf is its own mode 0. Throws EnigmaError when out of range.
  const IntTuple &mode(size_t i) const;
  /// 0 for a leaf, 1 + the deepest element for a tuple.
  int depth() const;
  /// CuTe notation: 8, (4,8), ((2,2),8).
  std::string str() const;

  friend bool operator==(const IntTuple &, const IntTuple &) = default;

private:
  bool leaf_ = true;
  int64_t value_ = 0;
  std::vector<IntTuple> elements_;
};

/// The tuple of the arguments: makeTuple(4, makeTuple(2, 2)) is (4,(2,2)).
template <class... Elements> IntTuple makeTuple(Elements... elements) {
  return IntTuple::tuple({IntTuple(elements)...});
}

/// Product of all leaves (1 for an empty tuple).
[[gnu::visibility("default")]] int64_t product(const IntTuple &t);
/// Sum of all leaves.
[[gnu::visibility("default")]] int64_t sum(const IntTuple &t);
/// The leaves in colexicographic order.
[[gnu::visibility("default")]] std::vector<int64_t> leaves(const IntTuple &t);
/// A flat tuple of the leaves; a leaf stays a leaf.
[[gnu::visibility("default")]] IntTuple flatten(const IntTuple &t);
/// True when a and b have the same tree structure (leaves may differ).
[[gnu::visibility("default")]] bool congruent(const IntTuple &a,
                                              const IntTuple &b);
/// A tuple shaped like `like` with every leaf set to `value`.
[[gnu::visibility("default")]] IntTuple repeatLike(const IntTuple &like,
                                                   int64_t value);
/// The tuple of the chosen top-level modes, in the given order.
[[gnu::visibility("default")]] IntTuple select(const IntTuple &t,
                                               const std::vector<size_t> &modes);
/// The product of each top-level mode: ((2,2),8) -> (4,8); a leaf stays.
[[gnu::visibility("default")]] IntTuple productEach(const IntTuple &t);
/// Column-major (colexicographic) compact strides for `shape`, starting at
/// `start`: (4,(2,3)) -> (1,(4,8)).
[[gnu::visibility("default")]] IntTuple compactColMajor(const IntTuple &shape,
                                                        int64_t start = 1);
/// Replaces the leaves of `like`, in order, with `values` (which must have
/// exactly as many entries as `like` has leaves).
[[gnu::visibility("default")]] IntTuple
unflattenLike(const std::vector<int64_t> &values, const IntTuple &like);

} // namespace enigma::layout

#endif
