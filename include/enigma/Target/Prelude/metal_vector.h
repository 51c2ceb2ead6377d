//===- metal_vector.h - Metal's vector types --------------------*- C++ -*-===//
//
// vec<T, N> for N = 2, 3, 4 with Metal's size and alignment (a 3-vector is
// laid out like a 4-vector, alignment equals size, so a float4 access is
// one 16-byte load), members .x .y .z .w / .r .g .b .a, v[i], and
// element-wise operators that keep the element type (uchar4 + uchar4 is
// uchar4, as in Metal; scalars are converted to the element type).
// Swizzle members (.xy, .xyz, ...) are not provided.
//
// The lanes live in an anonymous union of an array and named structs; GCC,
// Clang and NVCC define reading one union member through another, which is
// what v.x / v[0] rely on.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_VECTOR_H
#define ENIGMA_METAL_VECTOR_H

#include "metal_types.h"

namespace metal {

template <class T, int N> struct vec;

namespace detail {

// Metal: sizeof(vec<T,3>) == sizeof(vec<T,4>), alignment == size.
template <class T, int N> struct vec_lanes;

template <class T> struct alignas(2 * sizeof(T)) vec_lanes<T, 2> {
  union {
    T elements[2];
    struct { T x, y; };
    struct { T r, g; };
  };
};

template <class T> struct alignas(4 * sizeof(T)) vec_lanes<T, 3> {
  union {
    T elements[3];
    struct { T x, y, z; };
    struct { T r, g, b; };
  };
};

template <class T> struct alignas(4 * sizeof(T)) vec_lanes<T, 4> {
  union {
    T elements[4];
    struct { T x, y, z, w; };
    struct { T r, g, b, a; };
  };
};

template <class T> struct is_vec { enum : bool { value = false }; };
template <class T, int N> struct is_vec<vec<T, N>> {
  enum : bool { value = true };
};

// How many lanes an argument of a component-wise constructor of vec<T, N>
// fills: 1 for a scalar, M for a vec<T, M>; anything else can never add up.
template <class T, class Arg, class = void> struct lanes_filled {
  enum : int { value = 100 };
};
template <class T, class Arg>
struct lanes_filled<T, Arg, enable_if_t<is_metal_scalar<Arg>::value, void>> {
  enum : int { value = 1 };
};
template <class T, int M> struct lanes_filled<T, vec<T, M>, void> {
  enum : int { value = M };
};

template <class T, class... Args> struct total_lanes {
  enum : int { value = (0 + ... + int(lanes_filled<T, Args>::value)) };
};

} // namespace detail

template <class T, int N> struct vec : detail::vec_lanes<T, N> {
  static_assert(N >= 2 && N <= 4, "Metal vectors have 2, 3 or 4 lanes");
  static_assert(detail::is_metal_scalar<T>::value, "vector of a non-scalar");
  using value_type = T;
  enum : int { lanes = N };

  vec() = default;

  // Broadcast: float4(0) sets every lane.
  template <class U, detail::enable_if_t<detail::is_metal_scalar<U>::value> = 0>
  METAL_FUNC vec(U scalar) {
    for (int i = 0; i < N; ++i)
      this->elements[i] = static_cast<T>(scalar);
  }

  // Components: float4(x, y, z, w), float4(float2, z, w), float4(v3, w)...
  // Taken by value, so that a part read through an address-space-qualified
  // reference (Metal's `constant float &x`) deduces as the plain type.
  template <
      class... Parts,
      detail::enable_if_t<(sizeof...(Parts) >= 2) &&
                          detail::total_lanes<T, Parts...>::value == N> = 0>
  METAL_FUNC vec(Parts... parts) {
    int next = 0;
    (fill_from(next, parts), ...);
  }

  // Conversion between element types is explicit, as in Metal.
  template <class U, detail::enable_if_t<!detail::is_same<U, T>::value> = 0>
  METAL_FUNC explicit vec(const vec<U, N> &other) {
    for (int i = 0; i < N; ++i)
      this->elements[i] = static_cast<T>(other[i]);
  }

  METAL_FUNC T &operator[](int i) { return this->elements[i]; }
  METAL_FUNC const T &operator[](int i) const { return this->elements[i]; }

private:
  template <class Part> METAL_FUNC void fill_from(int &next, const Part &part) {
    if constexpr (detail::is_metal_scalar<Part>::value) {
      this->elements[next++] = static_cast<T>(part);
    } else {
      for (int i = 0; i < Part::lanes; ++i)
        this->elements[next++] = part[i];
    }
  }
};

#define METAL_VECTOR_ALIASES(T, name)                                          \
  typedef vec<T, 2> name##2;                                                   \
  typedef vec<T, 3> name##3;                                                   \
  typedef vec<T, 4> name##4;
METAL_VECTOR_ALIASES(float, float)
METAL_VECTOR_ALIASES(bool, bool)
METAL_VECTOR_ALIASES(signed char, char)
METAL_VECTOR_ALIASES(uchar, uchar)
METAL_VECTOR_ALIASES(short, short)
METAL_VECTOR_ALIASES(ushort, ushort)
METAL_VECTOR_ALIASES(int, int)
METAL_VECTOR_ALIASES(uint, uint)
METAL_VECTOR_ALIASES(long, long)
METAL_VECTOR_ALIASES(ulong, ulong)
#if METAL_HAS_HALF
METAL_VECTOR_ALIASES(half, half)
static_assert(sizeof(half2) == 4 && sizeof(half3) == 8, "Metal layout");
#endif
#if METAL_HAS_BFLOAT
METAL_VECTOR_ALIASES(bfloat, bfloat)
#endif
#undef METAL_VECTOR_ALIASES

static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "Metal layout");
static_assert(alignof(float4) == 16 && alignof(float2) == 8, "Metal layout");
static_assert(sizeof(uchar3) == 4 && sizeof(long3) == 32, "Metal layout");

namespace detail {

// Integer + - * wrap as on the GPU: they are done in unsigned arithmetic of
// at least 32 bits (signed overflow is undefined in C++, and C promotes
// narrow types to signed int), then narrowed. Under CUDA a 16-bit result
// is narrowed from an opaque value (see opaque_u32).
template <class T>
using lane_word_t = conditional_t<(sizeof(T) > 4), u64, u32>;

template <class T, class W> METAL_FUNC T narrow_wrapped(W value) {
#if METAL_DEVICE_CODE
  if constexpr (sizeof(T) == 2)
    return T(opaque_u32(u32(value)));
#endif
  return T(value);
}

// Lane operations. Shift counts are taken modulo the width (Metal's
// rule). Integer division by zero is undefined in Metal (it traps on x86).
struct op_add {
  template <class T> METAL_FUNC static T apply(T a, T b) {
    if constexpr (is_metal_integer<T>::value) {
      typedef lane_word_t<T> W;
      return narrow_wrapped<T>(W(unsigned_t<T>(a)) + W(unsigned_t<T>(b)));
    } else {
      return T(a + b);
    }
  }
};
struct op_sub {
  template <class T> METAL_FUNC static T apply(T a, T b) {
    if constexpr (is_metal_integer<T>::value) {
      typedef lane_word_t<T> W;
      return narrow_wrapped<T>(W(unsigned_t<T>(a)) - W(unsigned_t<T>(b)));
    } else {
      return T(a - b);
    }
  }
};
struct op_mul {
  template <class T> METAL_FUNC static T apply(T a, T b) {
    if constexpr (is_metal_integer<T>::value) {
      typedef lane_word_t<T> W;
      return narrow_wrapped<T>(W(unsigned_t<T>(a)) * W(unsigned_t<T>(b)));
    } else {
      return T(a * b);
    }
  }
};
struct op_div {
  template <class T> METAL_FUNC static T apply(T a, T b) { return T(a / b); }
};
struct op_rem {
  template <class T> METAL_FUNC static T apply(T a, T b) { return T(a % b); }
};
struct op_and {
  template <class T> METAL_FUNC static T apply(T a, T b) { return T(a & b); }
};
struct op_or {
  template <class T> METAL_FUNC static T apply(T a, T b) { return T(a | b); }
};
struct op_xor {
  template <class T> METAL_FUNC static T apply(T a, T b) { return T(a ^ b); }
};
struct op_shl {
  template <class T> METAL_FUNC static T apply(T a, T b) {
    typedef lane_word_t<T> W;
    return T(W(unsigned_t<T>(a))
             << (unsigned(b) % unsigned(int_traits<T>::bits)));
  }
};
struct op_shr {
  template <class T> METAL_FUNC static T apply(T a, T b) {
    return T(a >> (unsigned(b) % unsigned(int_traits<T>::bits)));
  }
};

template <class Op, class T, int N>
METAL_FUNC vec<T, N> lanewise(const vec<T, N> &a, const vec<T, N> &b) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = Op::apply(a[i], b[i]);
  return result;
}

template <class T> struct is_arith_lane {
  enum : bool {
    value = is_metal_scalar<T>::value && !is_same<T, bool>::value
  };
};
template <class T> struct is_bitwise_lane {
  enum : bool { value = is_integral<T>::value };
};

} // namespace detail

// Binary operators: vec op vec, vec op scalar, scalar op vec.
#define METAL_VECTOR_BINARY(op, Op, lane_ok)                                   \
  template <class T, int N,                                                    \
            detail::enable_if_t<detail::lane_ok<T>::value> = 0>                \
  METAL_FUNC vec<T, N> operator op(const vec<T, N> &a, const vec<T, N> &b) {   \
    return detail::lanewise<detail::Op>(a, b);                                 \
  }                                                                            \
  template <class T, int N, class S,                                           \
            detail::enable_if_t<detail::lane_ok<T>::value &&                   \
                                detail::is_metal_scalar<S>::value> = 0>        \
  METAL_FUNC vec<T, N> operator op(const vec<T, N> &a, S b) {                  \
    return detail::lanewise<detail::Op>(a, vec<T, N>(b));                      \
  }                                                                            \
  template <class T, int N, class S,                                           \
            detail::enable_if_t<detail::lane_ok<T>::value &&                   \
                                detail::is_metal_scalar<S>::value> = 0>        \
  METAL_FUNC vec<T, N> operator op(S a, const vec<T, N> &b) {                  \
    return detail::lanewise<detail::Op>(vec<T, N>(a), b);                      \
  }                                                                            \
  template <class T, int N, class B,                                           \
            class = decltype(detail::declval<vec<T, N>>()                      \
                                 op detail::declval<B>())>                     \
  METAL_FUNC vec<T, N> &operator op##=(vec<T, N> &a, const B &b) {             \
    a = a op b;                                                                \
    return a;                                                                  \
  }
METAL_VECTOR_BINARY(+, op_add, is_arith_lane)
METAL_VECTOR_BINARY(-, op_sub, is_arith_lane)
METAL_VECTOR_BINARY(*, op_mul, is_arith_lane)
METAL_VECTOR_BINARY(/, op_div, is_arith_lane)
METAL_VECTOR_BINARY(%, op_rem, is_metal_integer)
METAL_VECTOR_BINARY(&, op_and, is_bitwise_lane)
METAL_VECTOR_BINARY(|, op_or, is_bitwise_lane)
METAL_VECTOR_BINARY(^, op_xor, is_bitwise_lane)
METAL_VECTOR_BINARY(<<, op_shl, is_metal_integer)
METAL_VECTOR_BINARY(>>, op_shr, is_metal_integer)
#undef METAL_VECTOR_BINARY

// Comparisons give a bool vector.
#define METAL_VECTOR_COMPARE(op)                                               \
  template <class T, int N>                                                    \
  METAL_FUNC vec<bool, N> operator op(const vec<T, N> &a,                      \
                                      const vec<T, N> &b) {                    \
    vec<bool, N> result;                                                       \
    for (int i = 0; i < N; ++i)                                                \
      result[i] = a[i] op b[i];                                                \
    return result;                                                             \
  }                                                                            \
  template <class T, int N, class S,                                           \
            detail::enable_if_t<detail::is_metal_scalar<S>::value> = 0>        \
  METAL_FUNC vec<bool, N> operator op(const vec<T, N> &a, S b) {               \
    return a op vec<T, N>(b);                                                  \
  }                                                                            \
  template <class T, int N, class S,                                           \
            detail::enable_if_t<detail::is_metal_scalar<S>::value> = 0>        \
  METAL_FUNC vec<bool, N> operator op(S a, const vec<T, N> &b) {               \
    return vec<T, N>(a) op b;                                                  \
  }
METAL_VECTOR_COMPARE(==)
METAL_VECTOR_COMPARE(!=)
METAL_VECTOR_COMPARE(<)
METAL_VECTOR_COMPARE(<=)
METAL_VECTOR_COMPARE(>)
METAL_VECTOR_COMPARE(>=)
#undef METAL_VECTOR_COMPARE

// Negation flips the sign of floats (so -0.0 stays distinct) and wraps for
// integers.
template <class T, int N,
          detail::enable_if_t<detail::is_arith_lane<T>::value> = 0>
METAL_FUNC vec<T, N> operator-(const vec<T, N> &a) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i) {
    if constexpr (detail::is_metal_integer<T>::value)
      result[i] = detail::op_sub::apply(T(0), a[i]);
    else
      result[i] = T(-a[i]);
  }
  return result;
}

template <class T, int N> METAL_FUNC vec<T, N> operator+(const vec<T, N> &a) {
  return a;
}

template <class T, int N,
          detail::enable_if_t<detail::is_metal_integer<T>::value> = 0>
METAL_FUNC vec<T, N> operator~(const vec<T, N> &a) {
  vec<T, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = T(~a[i]);
  return result;
}

template <class T, int N>
METAL_FUNC vec<bool, N> operator!(const vec<T, N> &a) {
  vec<bool, N> result;
  for (int i = 0; i < N; ++i)
    result[i] = !a[i];
  return result;
}

} // namespace metal

#endif // ENIGMA_METAL_VECTOR_H
