//===- metal_integer.h - Metal's integer functions on scalars ---*- C++ -*-===//
//
// Metal's integer functions for every integer width, signed and unsigned,
// as templates over the scalar type. Results wrap or saturate as Metal
// defines, never hitting C++'s signed-overflow undefined behaviour. Plain
// `char` is Metal's signed 8-bit char on every target. Exact intermediate
// results use a type twice as wide (__int128 for 64-bit values: NVRTC
// needs --device-int128). Vector forms are in metal_elementwise.h.
//
// Under CUDA, abs, min and max of int, long and their unsigned types
// resolve to CUDA's own overloads (non-templates win), which agree with
// these except for abs(INT_MIN), undefined in CUDA: Enigma's CUDA prelude
// has enigma_abs for that.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_INTEGER_H
#define ENIGMA_METAL_INTEGER_H

#include "metal_types.h"

namespace metal {

namespace detail {

template <class T>
using enable_if_integer_t = enable_if_t<is_metal_integer<T>::value>;

// The value as the same-width unsigned bit pattern, widened to 64 bits.
template <class T> METAL_FUNC u64 raw_bits(T x) {
  return u64(unsigned_t<T>(x));
}

// A signed type wide enough for the exact sum or product of two values of
// T (and their unsigned twin for unsigned T).
template <class T>
using wide_signed_t = conditional_t<(sizeof(T) < 8), long long, __int128>;
template <class T>
using wide_t = conditional_t<is_signed_int<T>::value, wide_signed_t<T>,
                             conditional_t<(sizeof(T) < 8), u64,
                                           unsigned __int128>>;

template <class T, class W> METAL_FUNC T saturate_to(W wide) {
  if (wide > W(max_of<T>()))
    return T(max_of<T>());
  if constexpr (is_signed_int<T>::value)
    if (wide < W(min_of<T>()))
      return T(min_of<T>());
  return T(metal_int_t<T>(wide));
}

} // namespace detail

template <class T, detail::enable_if_integer_t<T> = 0> METAL_FUNC T abs(T x) {
  typedef detail::metal_int_t<T> M;
  typedef detail::unsigned_t<T> U;
  if constexpr (!detail::is_signed_int<T>::value) {
    return x;
  } else if constexpr (sizeof(T) < sizeof(int)) {
    const int value = M(x); // exact in int; abs(-128) narrows back to -128
    return T(value < 0 ? -value : value);
  } else {
    // abs(INT_MIN) wraps to INT_MIN.
    return M(x) < 0 ? T(M(U(U(0) - U(x)))) : x;
  }
}

// |x - y| without overflow; the result's bit pattern is the unsigned value.
template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T absdiff(T x, T y) {
  typedef detail::metal_int_t<T> M;
  typedef detail::unsigned_t<T> U;
  return M(x) > M(y) ? T(M(U(U(x) - U(y)))) : T(M(U(U(y) - U(x))));
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T min(T x, T y) {
  typedef detail::metal_int_t<T> M;
  return M(y) < M(x) ? y : x;
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T max(T x, T y) {
  typedef detail::metal_int_t<T> M;
  return M(x) < M(y) ? y : x;
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T addsat(T x, T y) {
  typedef detail::metal_int_t<T> M;
  if constexpr (detail::is_signed_int<T>::value) {
    typedef detail::wide_t<T> W;
    return detail::saturate_to<T>(W(M(x)) + W(M(y)));
  } else {
    const T sum = T(x + y);
    return sum < x ? T(detail::max_of<T>()) : sum;
  }
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T subsat(T x, T y) {
  typedef detail::metal_int_t<T> M;
  if constexpr (detail::is_signed_int<T>::value) {
    typedef detail::wide_t<T> W;
    return detail::saturate_to<T>(W(M(x)) - W(M(y)));
  } else {
    return x < y ? T(0) : T(x - y);
  }
}

// High half of the full-width product.
template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T mulhi(T x, T y) {
  typedef detail::metal_int_t<T> M;
  if constexpr (sizeof(T) == 8) {
    if constexpr (detail::is_signed_int<T>::value)
      return T(detail::mul_hi64((long long)x, (long long)y));
    else
      return T(detail::mul_hi64(detail::u64(x), detail::u64(y)));
  } else {
    typedef detail::wide_t<T> W;
    return T(M(W(W(M(x)) * W(M(y))) >> detail::int_traits<T>::bits));
  }
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T madhi(T x, T y, T z) {
  typedef detail::metal_int_t<T> M;
  typedef detail::unsigned_t<T> U;
  return T(M(U(U(mulhi(x, y)) + U(z))));
}

// x * y + z computed exactly, then saturated to T: |x*y| + |z| fits the
// wide type (2^126 + 2^63 signed, 2^128 - 2^64 unsigned at 64 bits).
template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T madsat(T x, T y, T z) {
  typedef detail::metal_int_t<T> M;
  typedef detail::wide_t<T> W;
  return detail::saturate_to<T>(W(M(x)) * W(M(y)) + W(M(z)));
}

// Rotate left by y modulo the width (a negative y rotates right).
template <class T, class Y,
          detail::enable_if_t<detail::is_metal_integer<T>::value &&
                              detail::is_metal_integer<Y>::value> = 0>
METAL_FUNC T rotate(T x, Y y) {
  typedef detail::unsigned_t<T> U;
  constexpr unsigned width = detail::int_traits<T>::bits;
  const unsigned count = unsigned(detail::raw_bits(y) % width);
  const U bits = U(x);
  return count == 0
             ? x
             : T(detail::metal_int_t<T>(
                   U(U(bits << count) | U(bits >> (width - count)))));
}

// clz(0) and ctz(0) are the width, as in Metal.
template <class T, detail::enable_if_integer_t<T> = 0> METAL_FUNC T clz(T x) {
  constexpr int width = detail::int_traits<T>::bits;
  if constexpr (width == 64)
    return T(detail::clz64(detail::raw_bits(x)));
  else
    return T(detail::clz32(detail::u32(detail::raw_bits(x))) - (32 - width));
}

template <class T, detail::enable_if_integer_t<T> = 0> METAL_FUNC T ctz(T x) {
  constexpr int width = detail::int_traits<T>::bits;
  const detail::u64 bits = detail::raw_bits(x);
  if (bits == 0)
    return T(width);
  if constexpr (width == 64)
    return T(detail::ctz64(bits));
  else
    return T(detail::ctz32(detail::u32(bits)));
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T popcount(T x) {
  if constexpr (detail::int_traits<T>::bits == 64)
    return T(detail::popcount64(detail::raw_bits(x)));
  else
    return T(detail::popcount32(detail::u32(detail::raw_bits(x))));
}

template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T reverse_bits(T x) {
  constexpr int width = detail::int_traits<T>::bits;
  typedef detail::unsigned_t<T> U;
  if constexpr (width == 64)
    return T(
        detail::metal_int_t<T>(detail::reverse_bits64(detail::raw_bits(x))));
  else
    return T(detail::metal_int_t<T>(
        U(detail::reverse_bits32(detail::u32(detail::raw_bits(x))) >>
          (32 - width))));
}

// Bits [offset, offset + bits) of x moved to the bottom; zero-extended for
// unsigned T, sign-extended from the top extracted bit for signed T;
// bits == 0 gives 0. offset + bits beyond the width is undefined in Metal
// (the shift counts are masked so that it is not undefined in C++).
template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T extract_bits(T x, uint offset, uint bits) {
  if (bits == 0)
    return T(0);
  const unsigned drop = (64u - bits) & 63u; // bits above the field
  const detail::u64 field = detail::raw_bits(x) >> (offset & 63u);
  if constexpr (detail::is_signed_int<T>::value)
    return T(detail::metal_int_t<T>((long long)(field << drop) >> drop));
  else
    return T((field << drop) >> drop);
}

// The low `bits` bits of insert placed at [offset, offset + bits) of base;
// bits == 0 returns base.
template <class T, detail::enable_if_integer_t<T> = 0>
METAL_FUNC T insert_bits(T base, T insert, uint offset, uint bits) {
  if (bits == 0)
    return base;
  const unsigned shift = offset & 63u;
  const detail::u64 mask = (~detail::u64(0) >> ((64u - bits) & 63u)) << shift;
  const detail::u64 merged = (detail::raw_bits(base) & ~mask) |
                             ((detail::raw_bits(insert) << shift) & mask);
  return T(detail::metal_int_t<T>(detail::unsigned_t<T>(merged)));
}

} // namespace metal

#endif // ENIGMA_METAL_INTEGER_H
