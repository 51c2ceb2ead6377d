//===- metal_host_elementwise.h - Vector forms of Metal functions -*- C++ -*-===//
//
// Every scalar function of metal_host_math.h and metal_host_integer.h applied
// lane by lane to vectors. Arguments may mix vectors and scalars (clamp(v,
// 0.0f, 1.0f), step(0.5f, v), mix(a, b, t)); scalars are converted to the
// vector's element type first, as Metal does. Included after the scalar
// headers so the lane calls see every scalar overload.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_ELEMENTWISE_H
#define ENIGMA_METAL_HOST_ELEMENTWISE_H

#include "metal_host_integer.h"
#include "metal_host_math.h"
#include "metal_host_vector.h"

namespace metal {

namespace detail {

// The lane count and element type of the first vector among Args.
template <class... Args> struct first_vec;
template <class T, int N, class... Rest>
struct first_vec<vec<T, N>, Rest...> {
  using element = T;
  static constexpr int lanes = N;
};
template <class Head, class... Rest>
struct first_vec<Head, Rest...> : first_vec<Rest...> {};

// Enabled when at least one argument is a vector and the others are vectors
// of the same lane count or scalars.
template <class... Args>
constexpr bool any_vec_v = (false || ... || is_vec_v<Args>);

template <int N, class Arg, class = void> struct fits_lanes : std::false_type {};
template <int N, class Arg>
struct fits_lanes<N, Arg, std::enable_if_t<is_metal_scalar_v<Arg>>>
    : std::true_type {};
template <int N, class T> struct fits_lanes<N, vec<T, N>, void> : std::true_type {};

template <class... Args> constexpr bool valid_lanewise_call() {
  if constexpr (any_vec_v<Args...>)
    return (true && ... && fits_lanes<first_vec<Args...>::lanes, Args>::value);
  else
    return false;
}

template <class T, class Arg> inline auto lane(const Arg &arg, int i) {
  if constexpr (is_vec_v<Arg>)
    return arg[i];
  else
    return static_cast<T>(arg);
}

template <class Fn, class... Args>
inline auto map_lanes(Fn fn, const Args &...args) {
  using First = first_vec<Args...>;
  using T = typename First::element;
  using Result = decltype(fn(lane<T>(args, 0)...));
  vec<Result, First::lanes> result;
  for (int i = 0; i < First::lanes; ++i)
    result[i] = fn(lane<T>(args, i)...);
  return result;
}

} // namespace detail

#define ENIGMA_METAL_ELEMENTWISE(name)                                         \
  template <class... Args,                                                     \
            std::enable_if_t<detail::valid_lanewise_call<Args...>(), int> = 0> \
  inline auto name(const Args &...args) {                                      \
    return detail::map_lanes(                                                  \
        [](const auto &...lanes) { return name(lanes...); }, args...);         \
  }

// Float functions.
ENIGMA_METAL_ELEMENTWISE(sqrt)
ENIGMA_METAL_ELEMENTWISE(rsqrt)
ENIGMA_METAL_ELEMENTWISE(fabs)
ENIGMA_METAL_ELEMENTWISE(ceil)
ENIGMA_METAL_ELEMENTWISE(floor)
ENIGMA_METAL_ELEMENTWISE(round)
ENIGMA_METAL_ELEMENTWISE(rint)
ENIGMA_METAL_ELEMENTWISE(trunc)
ENIGMA_METAL_ELEMENTWISE(sign)
ENIGMA_METAL_ELEMENTWISE(saturate)
ENIGMA_METAL_ELEMENTWISE(fract)
ENIGMA_METAL_ELEMENTWISE(exp)
ENIGMA_METAL_ELEMENTWISE(exp2)
ENIGMA_METAL_ELEMENTWISE(exp10)
ENIGMA_METAL_ELEMENTWISE(log)
ENIGMA_METAL_ELEMENTWISE(log2)
ENIGMA_METAL_ELEMENTWISE(log10)
ENIGMA_METAL_ELEMENTWISE(sin)
ENIGMA_METAL_ELEMENTWISE(cos)
ENIGMA_METAL_ELEMENTWISE(tan)
ENIGMA_METAL_ELEMENTWISE(asin)
ENIGMA_METAL_ELEMENTWISE(acos)
ENIGMA_METAL_ELEMENTWISE(atan)
ENIGMA_METAL_ELEMENTWISE(sinh)
ENIGMA_METAL_ELEMENTWISE(cosh)
ENIGMA_METAL_ELEMENTWISE(tanh)
ENIGMA_METAL_ELEMENTWISE(asinh)
ENIGMA_METAL_ELEMENTWISE(acosh)
ENIGMA_METAL_ELEMENTWISE(atanh)
ENIGMA_METAL_ELEMENTWISE(fmin)
ENIGMA_METAL_ELEMENTWISE(fmax)
ENIGMA_METAL_ELEMENTWISE(pow)
ENIGMA_METAL_ELEMENTWISE(powr)
ENIGMA_METAL_ELEMENTWISE(fmod)
ENIGMA_METAL_ELEMENTWISE(atan2)
ENIGMA_METAL_ELEMENTWISE(step)
ENIGMA_METAL_ELEMENTWISE(copysign)
ENIGMA_METAL_ELEMENTWISE(fma)
ENIGMA_METAL_ELEMENTWISE(mad)
ENIGMA_METAL_ELEMENTWISE(mix)
ENIGMA_METAL_ELEMENTWISE(smoothstep)
ENIGMA_METAL_ELEMENTWISE(isnan)
ENIGMA_METAL_ELEMENTWISE(isinf)
ENIGMA_METAL_ELEMENTWISE(isfinite)
ENIGMA_METAL_ELEMENTWISE(signbit)
ENIGMA_METAL_ELEMENTWISE(isnormal)

// Functions with float and integer forms.
ENIGMA_METAL_ELEMENTWISE(abs)
ENIGMA_METAL_ELEMENTWISE(min)
ENIGMA_METAL_ELEMENTWISE(max)
ENIGMA_METAL_ELEMENTWISE(clamp)

// Integer functions.
ENIGMA_METAL_ELEMENTWISE(absdiff)
ENIGMA_METAL_ELEMENTWISE(addsat)
ENIGMA_METAL_ELEMENTWISE(subsat)
ENIGMA_METAL_ELEMENTWISE(mulhi)
ENIGMA_METAL_ELEMENTWISE(madhi)
ENIGMA_METAL_ELEMENTWISE(madsat)
ENIGMA_METAL_ELEMENTWISE(rotate)
ENIGMA_METAL_ELEMENTWISE(clz)
ENIGMA_METAL_ELEMENTWISE(ctz)
ENIGMA_METAL_ELEMENTWISE(popcount)
ENIGMA_METAL_ELEMENTWISE(reverse_bits)

#undef ENIGMA_METAL_ELEMENTWISE

// extract_bits / insert_bits take scalar offset and bit counts.
template <class T, int N>
inline vec<T, N> extract_bits(const vec<T, N> &x, uint offset, uint bits) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = extract_bits(x[i], offset, bits);
  return result;
}

template <class T, int N>
inline vec<T, N> insert_bits(const vec<T, N> &base, const vec<T, N> &insert,
                             uint offset, uint bits) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = insert_bits(base[i], insert[i], offset, bits);
  return result;
}

// select(a, b, c) is c ? b : a, per lane for vectors.
template <class T, std::enable_if_t<detail::is_metal_scalar_v<T>, int> = 0>
inline T select(T a, T b, bool c) {
  return c ? b : a;
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N> &a, const vec<T, N> &b,
                        const vec<bool, N> &c) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = c[i] ? b[i] : a[i];
  return result;
}
template <class T, int N>
inline vec<T, N> select(const vec<T, N> &a, const vec<T, N> &b, bool c) {
  return c ? b : a;
}

// all / any over bool vectors.
template <int N> inline bool all(const vec<bool, N> &v) {
  for (int i = 0; i < N; ++i)
    if (!v[i])
      return false;
  return true;
}
template <int N> inline bool any(const vec<bool, N> &v) {
  for (int i = 0; i < N; ++i)
    if (v[i])
      return true;
  return false;
}

} // namespace metal

#endif // ENIGMA_METAL_HOST_ELEMENTWISE_H
