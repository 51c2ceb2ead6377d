//===- metal_elementwise.h - Vector forms of Metal functions ----*- C++ -*-===//
//
// Every scalar function of metal_math.h and metal_integer.h applied lane by
// lane to vectors. Arguments may mix vectors and scalars (clamp(v, 0.0f,
// 1.0f), step(0.5f, v), mix(a, b, t)); scalars are converted to the
// vector's element type first, as Metal does. Included after the scalar
// headers so the lane calls see every scalar overload.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_ELEMENTWISE_H
#define ENIGMA_METAL_ELEMENTWISE_H

#include "metal_integer.h"
#include "metal_math.h"
#include "metal_vector.h"

namespace metal {

namespace detail {

// The lane count and element type of the first vector among Args.
template <class... Args> struct first_vec;
template <class T, int N, class... Rest>
struct first_vec<vec<T, N>, Rest...> {
  using element = T;
  enum : int { lanes = N };
};
template <class Head, class... Rest>
struct first_vec<Head, Rest...> : first_vec<Rest...> {};

// Enabled when at least one argument is a vector and the others are vectors
// of the same lane count or scalars.
template <class... Args> struct any_vec {
  enum : bool { value = (false || ... || is_vec<Args>::value) };
};

template <int N, class Arg, class = void> struct fits_lanes {
  enum : bool { value = false };
};
template <int N, class Arg>
struct fits_lanes<N, Arg, enable_if_t<is_metal_scalar<Arg>::value, void>> {
  enum : bool { value = true };
};
template <int N, class T> struct fits_lanes<N, vec<T, N>, void> {
  enum : bool { value = true };
};

template <class... Args> constexpr bool valid_lanewise_call() {
  if constexpr (any_vec<Args...>::value)
    return (true && ... && fits_lanes<first_vec<Args...>::lanes, Args>::value);
  else
    return false;
}

template <class T, class Arg> METAL_FUNC auto lane(const Arg &arg, int i) {
  if constexpr (is_vec<Arg>::value)
    return arg[i];
  else
    return static_cast<T>(arg);
}

template <class Fn, class... Args>
METAL_FUNC auto map_lanes(Fn fn, const Args &...args) {
  using First = first_vec<Args...>;
  using T = typename First::element;
  using Result = decltype(fn(lane<T>(args, 0)...));
  vec<Result, First::lanes> result;
  for (int i = 0; i < First::lanes; ++i)
    result[i] = fn(lane<T>(args, i)...);
  return result;
}

} // namespace detail

// name(vectors and scalars...): the scalar `name` on each lane, its result
// converted to `lane_result` (nothing, or bool for predicates). A lambda
// rather than a named function object: NVRTC parses it faster.
#define METAL_ELEMENTWISE_AS(name, lane_result)                                \
  template <class... Args,                                                     \
            detail::enable_if_t<detail::valid_lanewise_call<Args...>()> = 0>   \
  METAL_FUNC auto name(const Args &...args) {                                  \
    return detail::map_lanes(                                                  \
        [](const auto &...lanes) { return lane_result(name(lanes...)); },      \
        args...);                                                              \
  }
#define METAL_ELEMENTWISE(name) METAL_ELEMENTWISE_AS(name, )
// Predicates give bool lanes (CUDA's signbit(float) returns int, as C's).
#define METAL_ELEMENTWISE_PREDICATE(name) METAL_ELEMENTWISE_AS(name, bool)

// Float functions (the lists of metal_math.h).
#define METAL_ELEMENTWISE_FLOAT(T, name) METAL_ELEMENTWISE(name)
#define METAL_ELEMENTWISE_FLOAT_PREDICATE(T, name)                             \
  METAL_ELEMENTWISE_PREDICATE(name)
METAL_FLOAT_FUNCTIONS_1(float, METAL_ELEMENTWISE_FLOAT)
METAL_FLOAT_FUNCTIONS_2(float, METAL_ELEMENTWISE_FLOAT)
METAL_FLOAT_FUNCTIONS_3(float, METAL_ELEMENTWISE_FLOAT)
METAL_FLOAT_PREDICATES(float, METAL_ELEMENTWISE_FLOAT_PREDICATE)
METAL_ELEMENTWISE(fract)
METAL_ELEMENTWISE_PREDICATE(isnormal)
#undef METAL_ELEMENTWISE_FLOAT
#undef METAL_ELEMENTWISE_FLOAT_PREDICATE

// Functions with float and integer forms.
METAL_ELEMENTWISE(abs)
METAL_ELEMENTWISE(min)
METAL_ELEMENTWISE(max)
METAL_ELEMENTWISE(clamp)

// Integer functions.
METAL_ELEMENTWISE(absdiff)
METAL_ELEMENTWISE(addsat)
METAL_ELEMENTWISE(subsat)
METAL_ELEMENTWISE(mulhi)
METAL_ELEMENTWISE(madhi)
METAL_ELEMENTWISE(madsat)
METAL_ELEMENTWISE(rotate)
METAL_ELEMENTWISE(clz)
METAL_ELEMENTWISE(ctz)
METAL_ELEMENTWISE(popcount)
METAL_ELEMENTWISE(reverse_bits)

#undef METAL_ELEMENTWISE
#undef METAL_ELEMENTWISE_PREDICATE
#undef METAL_ELEMENTWISE_AS

// extract_bits / insert_bits take scalar offset and bit counts.
template <class T, int N>
METAL_FUNC vec<T, N> extract_bits(const vec<T, N> &x, uint offset, uint bits) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = extract_bits(x[i], offset, bits);
  return result;
}

template <class T, int N>
METAL_FUNC vec<T, N> insert_bits(const vec<T, N> &base, const vec<T, N> &insert,
                                 uint offset, uint bits) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = insert_bits(base[i], insert[i], offset, bits);
  return result;
}

// select(a, b, c) is c ? b : a, per lane for vectors.
template <class T, detail::enable_if_t<detail::is_metal_scalar<T>::value> = 0>
METAL_FUNC T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, int N>
METAL_FUNC vec<T, N> select(const vec<T, N> &a, const vec<T, N> &b,
                            const vec<bool, N> &c) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = c[i] ? b[i] : a[i];
  return result;
}
template <class T, int N>
METAL_FUNC vec<T, N> select(const vec<T, N> &a, const vec<T, N> &b, bool c) {
  return c ? b : a;
}

// all / any over bool vectors.
template <int N> METAL_FUNC bool all(const vec<bool, N> &v) {
  for (int i = 0; i < N; ++i)
    if (!v[i])
      return false;
  return true;
}
template <int N> METAL_FUNC bool any(const vec<bool, N> &v) {
  for (int i = 0; i < N; ++i)
    if (v[i])
      return true;
  return false;
}

} // namespace metal

#endif // ENIGMA_METAL_ELEMENTWISE_H
