//===- IntTuple.cpp - Nested integer tuples --------------------------------===//
#include "enigma/Layout/IntTuple.h"

#include "enigma/Support/Error.h"

namespace enigma::layout {

IntTuple IntTuple::tuple(std::vector<IntTuple> elements) {
  IntTuple t;
  t.leaf_ = false;
  t.elements_ = std::move(elements);
  return t;
}

int64_t IntTuple::value() const {
  if (!leaf_)
    throw EnigmaError("expected an integer, got the tuple " + str());
  return value_;
}

const std::vector<IntTuple> &IntTuple::elements() const {
  if (leaf_)
    throw EnigmaError("expected a tuple, got the integer " + str());
  return elements_;
}

const IntTuple &IntTuple::mode(size_t i) const {
  if (i >= rank())
    throw EnigmaError("mode " + std::to_string(i) + " is out of range for " +
                      str() + " of rank " + std::to_string(rank()));
  return leaf_ ? *this : elements_[i];
}

int IntTuple::depth() const {
  if (leaf_)
    return 0;
  int deepest = 0;
  for (const IntTuple &e : elements_)
    deepest = std::max(deepest, e.depth());
  return 1 + deepest;
}

std::string IntTuple::str() const {
  if (leaf_)
    return std::to_string(value_);
  std::string s = "(";
  for (size_t i = 0; i < elements_.size(); ++i)
    s += (i ? "," : "") + elements_[i].str();
  return s + ")";
}

int64_t product(const IntTuple &t) {
  if (t.isLeaf())
    return t.value();
  int64_t p = 1;
  for (const IntTuple &e : t.elements())
    p *= product(e);
  return p;
}

int64_t sum(const IntTuple &t) {
  int64_t s = 0;
  for (int64_t v : leaves(t))
    s += v;
  return s;
}

static void collectLeaves(const IntTuple &t, std::vector<int64_t> &out) {
  if (t.isLeaf()) {
    out.push_back(t.value());
    return;
  }
  for (const IntTuple &e : t.elements())
    collectLeaves(e, out);
}

std::vector<int64_t> leaves(const IntTuple &t) {
  std::vector<int64_t> out;
  collectLeaves(t, out);
  return out;
}

IntTuple flatten(const IntTuple &t) {
  if (t.isLeaf())
    return t;
  std::vector<IntTuple> flat;
  for (int64_t v : leaves(t))
    flat.emplace_back(v);
  return IntTuple::tuple(std::move(flat));
}

bool congruent(const IntTuple &a, const IntTuple &b) {
  if (a.isLeaf() || b.isLeaf())
    return a.isLeaf() && b.isLeaf();
  if (a.rank() != b.rank())
    return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (!congruent(a.mode(i), b.mode(i)))
      return false;
  return true;
}

IntTuple repeatLike(const IntTuple &like, int64_t value) {
  if (like.isLeaf())
    return value;
  std::vector<IntTuple> out;
  for (const IntTuple &e : like.elements())
    out.push_back(repeatLike(e, value));
  return IntTuple::tuple(std::move(out));
}

IntTuple select(const IntTuple &t, const std::vector<size_t> &modes) {
  std::vector<IntTuple> out;
  for (size_t m : modes)
    out.push_back(t.mode(m));
  return IntTuple::tuple(std::move(out));
}

IntTuple productEach(const IntTuple &t) {
  if (t.isLeaf())
    return t;
  std::vector<IntTuple> out;
  for (const IntTuple &e : t.elements())
    out.emplace_back(product(e));
  return IntTuple::tuple(std::move(out));
}

static IntTuple compactFrom(const IntTuple &shape, int64_t &running) {
  if (shape.isLeaf()) {
    int64_t stride = running;
    running *= shape.value();
    return stride;
  }
  std::vector<IntTuple> out;
  for (const IntTuple &e : shape.elements())
    out.push_back(compactFrom(e, running));
  return IntTuple::tuple(std::move(out));
}

IntTuple compactColMajor(const IntTuple &shape, int64_t start) {
  return compactFrom(shape, start);
}

static IntTuple rebuild(const IntTuple &like, const std::vector<int64_t> &values,
                        size_t &next) {
  if (like.isLeaf())
    return values[next++];
  std::vector<IntTuple> out;
  for (const IntTuple &e : like.elements())
    out.push_back(rebuild(e, values, next));
  return IntTuple::tuple(std::move(out));
}

IntTuple unflattenLike(const std::vector<int64_t> &values,
                       const IntTuple &like) {
  if (values.size() != leaves(like).size())
    throw EnigmaError("cannot shape " + std::to_string(values.size()) +
                      " values like " + like.str());
  size_t next = 0;
  return rebuild(like, values, next);
}

} // namespace enigma::layout
