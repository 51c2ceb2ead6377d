//===- metal_host_vector.h - Metal vector types on the host -----*- C++ -*-===//
//
// vec<T, N> for N = 2, 3, 4 with Metal's size and alignment (a 3-vector is
// laid out like a 4-vector), members .x .y .z .w / .r .g .b .a, v[i], and
// element-wise operators that keep the element type (uchar4 + uchar4 is
// uchar4, as in Metal; scalars are converted to the element type).
// Swizzle members (.xy, .xyz, ...) are not provided.
//
// The lanes live in an anonymous union of an array and named structs; GCC
// and Clang define reading one union member through another, which is what
// v.x / v[0] rely on.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_VECTOR_H
#define ENIGMA_METAL_HOST_VECTOR_H

#include "metal_host_types.h"

namespace metal {

template <class T, int N> struct vec;

namespace detail {

// Metal: sizeof(vec<T,3>) == sizeof(vec<T,4>), alignment == size.
template <class T, int N>
constexpr int vec_alignment = int(sizeof(T)) * (N == 3 ? 4 : N);

template <class T, int N> struct vec_lanes;

template <class T> struct alignas(vec_alignment<T, 2>) vec_lanes<T, 2> {
  union {
    T elements[2];
    struct { T x, y; };
    struct { T r, g; };
  };
};

template <class T> struct alignas(vec_alignment<T, 3>) vec_lanes<T, 3> {
  union {
    T elements[3];
    struct { T x, y, z; };
    struct { T r, g, b; };
  };
};

template <class T> struct alignas(vec_alignment<T, 4>) vec_lanes<T, 4> {
  union {
    T elements[4];
    struct { T x, y, z, w; };
    struct { T r, g, b, a; };
  };
};

template <class T> struct is_vec : std::false_type {};
template <class T, int N> struct is_vec<vec<T, N>> : std::true_type {};
template <class T> constexpr bool is_vec_v = is_vec<T>::value;

// How many lanes an argument of a component-wise constructor of vec<T, N>
// fills: 1 for a scalar, M for a vec<T, M>; anything else can never add up.
template <class T, class Arg, class = void> struct lanes_filled {
  static constexpr int value = 100;
};
template <class T, class Arg>
struct lanes_filled<T, Arg, std::enable_if_t<is_metal_scalar_v<Arg>>> {
  static constexpr int value = 1;
};
template <class T, int M> struct lanes_filled<T, vec<T, M>, void> {
  static constexpr int value = M;
};

template <class T, class... Args>
constexpr int total_lanes = (0 + ... + lanes_filled<T, Args>::value);

} // namespace detail

template <class T, int N> struct vec : detail::vec_lanes<T, N> {
  static_assert(N >= 2 && N <= 4, "Metal vectors have 2, 3 or 4 lanes");
  static_assert(detail::is_metal_scalar_v<T>, "vector of a non-scalar");
  using value_type = T;
  static constexpr int lanes = N;

  vec() = default;

  // Broadcast: float4(0) sets every lane.
  template <class U,
            std::enable_if_t<detail::is_metal_scalar_v<U>, int> = 0>
  vec(U scalar) {
    for (int i = 0; i < N; ++i)
      this->elements[i] = static_cast<T>(scalar);
  }

  // Components: float4(x, y, z, w), float4(float2, z, w), float4(v3, w)...
  template <class... Parts,
            std::enable_if_t<(sizeof...(Parts) >= 2) &&
                                 detail::total_lanes<T, Parts...> == N,
                             int> = 0>
  vec(const Parts &...parts) {
    int next = 0;
    (fill_from(next, parts), ...);
  }

  // Conversion between element types is explicit, as in Metal.
  template <class U, std::enable_if_t<!std::is_same<U, T>::value, int> = 0>
  explicit vec(const vec<U, N> &other) {
    for (int i = 0; i < N; ++i)
      this->elements[i] = static_cast<T>(other[i]);
  }

  T &operator[](int i) { return this->elements[i]; }
  const T &operator[](int i) const { return this->elements[i]; }

private:
  template <class Part> void fill_from(int &next, const Part &part) {
    if constexpr (detail::is_metal_scalar_v<Part>) {
      this->elements[next++] = static_cast<T>(part);
    } else {
      for (int i = 0; i < Part::lanes; ++i)
        this->elements[next++] = part[i];
    }
  }
};

#define ENIGMA_METAL_VECTOR_ALIASES(T, name)                                   \
  typedef vec<T, 2> name##2;                                                   \
  typedef vec<T, 3> name##3;                                                   \
  typedef vec<T, 4> name##4;
ENIGMA_METAL_VECTOR_ALIASES(float, float)
ENIGMA_METAL_VECTOR_ALIASES(half, half)
ENIGMA_METAL_VECTOR_ALIASES(bfloat, bfloat)
ENIGMA_METAL_VECTOR_ALIASES(bool, bool)
ENIGMA_METAL_VECTOR_ALIASES(signed char, char)
ENIGMA_METAL_VECTOR_ALIASES(uchar, uchar)
ENIGMA_METAL_VECTOR_ALIASES(short, short)
ENIGMA_METAL_VECTOR_ALIASES(ushort, ushort)
ENIGMA_METAL_VECTOR_ALIASES(int, int)
ENIGMA_METAL_VECTOR_ALIASES(uint, uint)
ENIGMA_METAL_VECTOR_ALIASES(long, long)
ENIGMA_METAL_VECTOR_ALIASES(ulong, ulong)
#undef ENIGMA_METAL_VECTOR_ALIASES

static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "Metal layout");
static_assert(sizeof(half2) == 4 && sizeof(uchar3) == 4, "Metal layout");

namespace detail {

template <class T>
constexpr bool is_metal_integer_v =
    std::is_integral<T>::value && !std::is_same<T, bool>::value;

// Lane operations. Integer + - * << wrap like Metal (done unsigned, since
// signed overflow is undefined in C++); shift counts are taken modulo the
// width. Integer division by zero is undefined in Metal and traps here.
struct op_add {
  template <class T> static T apply(T a, T b) {
    if constexpr (is_metal_integer_v<T>)
      return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
    else
      return T(a + b);
  }
};
struct op_sub {
  template <class T> static T apply(T a, T b) {
    if constexpr (is_metal_integer_v<T>)
      return T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b));
    else
      return T(a - b);
  }
};
struct op_mul {
  template <class T> static T apply(T a, T b) {
    if constexpr (is_metal_integer_v<T>) {
      // Promote to at least unsigned int so ushort*ushort cannot overflow int.
      using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
      return T(U(a) * U(b));
    } else {
      return T(a * b);
    }
  }
};
struct op_div {
  template <class T> static T apply(T a, T b) { return T(a / b); }
};
struct op_rem {
  template <class T> static T apply(T a, T b) { return T(a % b); }
};
struct op_and {
  template <class T> static T apply(T a, T b) { return T(a & b); }
};
struct op_or {
  template <class T> static T apply(T a, T b) { return T(a | b); }
};
struct op_xor {
  template <class T> static T apply(T a, T b) { return T(a ^ b); }
};
struct op_shl {
  template <class T> static T apply(T a, T b) {
    using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
    return T(U(a) << (unsigned(b) % (sizeof(T) * 8)));
  }
};
struct op_shr {
  template <class T> static T apply(T a, T b) {
    return T(a >> (unsigned(b) % (sizeof(T) * 8)));
  }
};

template <class Op, class T, int N>
inline vec<T, N> lanewise(const vec<T, N> &a, const vec<T, N> &b) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = Op::apply(a[i], b[i]);
  return result;
}

template <class T> constexpr bool is_arith_lane_v =
    is_metal_scalar_v<T> && !std::is_same<T, bool>::value;
template <class T> constexpr bool is_bitwise_lane_v = std::is_integral<T>::value;
template <class T> constexpr bool is_shift_lane_v = is_metal_integer_v<T>;

} // namespace detail

// Binary operators: vec op vec, vec op scalar, scalar op vec.
#define ENIGMA_METAL_VECTOR_BINARY(op, Op, lane_ok)                            \
  template <class T, int N, std::enable_if_t<detail::lane_ok<T>, int> = 0>     \
  inline vec<T, N> operator op(const vec<T, N> &a, const vec<T, N> &b) {      \
    return detail::lanewise<detail::Op>(a, b);                                 \
  }                                                                            \
  template <class T, int N, class S,                                           \
            std::enable_if_t<detail::lane_ok<T> &&                             \
                                 detail::is_metal_scalar_v<S>,                 \
                             int> = 0>                                         \
  inline vec<T, N> operator op(const vec<T, N> &a, S b) {                     \
    return detail::lanewise<detail::Op>(a, vec<T, N>(b));                      \
  }                                                                            \
  template <class T, int N, class S,                                           \
            std::enable_if_t<detail::lane_ok<T> &&                             \
                                 detail::is_metal_scalar_v<S>,                 \
                             int> = 0>                                         \
  inline vec<T, N> operator op(S a, const vec<T, N> &b) {                     \
    return detail::lanewise<detail::Op>(vec<T, N>(a), b);                      \
  }                                                                            \
  template <class T, int N, class B,                                           \
            class = decltype(std::declval<vec<T, N>>() op std::declval<B>())> \
  inline vec<T, N> &operator op##=(vec<T, N> &a, const B &b) {                 \
    a = a op b;                                                                \
    return a;                                                                  \
  }
ENIGMA_METAL_VECTOR_BINARY(+, op_add, is_arith_lane_v)
ENIGMA_METAL_VECTOR_BINARY(-, op_sub, is_arith_lane_v)
ENIGMA_METAL_VECTOR_BINARY(*, op_mul, is_arith_lane_v)
ENIGMA_METAL_VECTOR_BINARY(/, op_div, is_arith_lane_v)
ENIGMA_METAL_VECTOR_BINARY(%, op_rem, is_metal_integer_v)
ENIGMA_METAL_VECTOR_BINARY(&, op_and, is_bitwise_lane_v)
ENIGMA_METAL_VECTOR_BINARY(|, op_or, is_bitwise_lane_v)
ENIGMA_METAL_VECTOR_BINARY(^, op_xor, is_bitwise_lane_v)
ENIGMA_METAL_VECTOR_BINARY(<<, op_shl, is_shift_lane_v)
ENIGMA_METAL_VECTOR_BINARY(>>, op_shr, is_shift_lane_v)
#undef ENIGMA_METAL_VECTOR_BINARY

// Comparisons give a bool vector.
#define ENIGMA_METAL_VECTOR_COMPARE(op)                                        \
  template <class T, int N>                                                    \
  inline vec<bool, N> operator op(const vec<T, N> &a, const vec<T, N> &b) {   \
    vec<bool, N> result;                                                       \
    for (int i = 0; i < N; ++i)                                                \
      result[i] = a[i] op b[i];                                                \
    return result;                                                             \
  }                                                                            \
  template <class T, int N, class S,                                           \
            std::enable_if_t<detail::is_metal_scalar_v<S>, int> = 0>           \
  inline vec<bool, N> operator op(const vec<T, N> &a, S b) {                  \
    return a op vec<T, N>(b);                                                  \
  }                                                                            \
  template <class T, int N, class S,                                           \
            std::enable_if_t<detail::is_metal_scalar_v<S>, int> = 0>           \
  inline vec<bool, N> operator op(S a, const vec<T, N> &b) {                  \
    return vec<T, N>(a) op b;                                                  \
  }
ENIGMA_METAL_VECTOR_COMPARE(==)
ENIGMA_METAL_VECTOR_COMPARE(!=)
ENIGMA_METAL_VECTOR_COMPARE(<)
ENIGMA_METAL_VECTOR_COMPARE(<=)
ENIGMA_METAL_VECTOR_COMPARE(>)
ENIGMA_METAL_VECTOR_COMPARE(>=)
#undef ENIGMA_METAL_VECTOR_COMPARE

// Negation flips the sign of floats (so -0.0 stays distinct) and wraps for
// integers.
template <class T, int N,
          std::enable_if_t<detail::is_arith_lane_v<T>, int> = 0>
inline vec<T, N> operator-(const vec<T, N> &a) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i) {
    if constexpr (detail::is_metal_integer_v<T>)
      result[i] = detail::op_sub::apply(T(0), a[i]);
    else
      result[i] = T(-a[i]);
  }
  return result;
}

template <class T, int N> inline vec<T, N> operator+(const vec<T, N> &a) {
  return a;
}

template <class T, int N,
          std::enable_if_t<detail::is_metal_integer_v<T>, int> = 0>
inline vec<T, N> operator~(const vec<T, N> &a) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = T(~a[i]);
  return result;
}

template <class T, int N> inline vec<bool, N> operator!(const vec<T, N> &a) {
  vec<bool, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = !a[i];
  return result;
}

} // namespace metal

#endif // ENIGMA_METAL_HOST_VECTOR_H
