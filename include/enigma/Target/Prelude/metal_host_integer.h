//===- metal_host_integer.h - Metal integer functions on scalars -*- C++ -*-===//
//
// Metal's integer functions for every integer width, signed and unsigned,
// as templates over the scalar type. Results wrap or saturate as Metal
// defines, never hitting C++'s signed-overflow undefined behaviour. Plain
// `char` is treated as Metal's signed 8-bit char on every host. Vector
// forms are in metal_host_elementwise.h.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_INTEGER_H
#define ENIGMA_METAL_HOST_INTEGER_H

#include "metal_host_types.h"

#include <limits>

namespace metal {

namespace detail {

template <class T>
using enable_if_integer_t =
    std::enable_if_t<std::is_integral<T>::value &&
                         !std::is_same<T, bool>::value,
                     int>;

// The type Metal computes with: `char` means signed char.
template <class T>
using metal_int_t =
    std::conditional_t<std::is_same<T, char>::value, signed char, T>;

template <class T> constexpr int bit_width = int(sizeof(T) * 8);

template <class T> constexpr bool is_signed_int_v =
    std::is_signed<metal_int_t<T>>::value;

// The value as the same-width unsigned bit pattern, widened to 64 bits.
template <class T> inline uint64_t raw_bits(T x) {
  return uint64_t(std::make_unsigned_t<metal_int_t<T>>(x));
}

// Lowest `bits` bits set; `bits` may equal 64.
inline uint64_t low_mask(unsigned bits) {
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1u;
}

// A 128-bit integer wide enough for any product of two 64-bit values of T.
template <class T>
using wide_t = std::conditional_t<is_signed_int_v<T>, __int128,
                                  unsigned __int128>;

template <class T, class W> inline T saturate_to(W wide) {
  using M = metal_int_t<T>;
  const W lowest = W(std::numeric_limits<M>::min());
  const W highest = W(std::numeric_limits<M>::max());
  return T(M(wide < lowest ? lowest : wide > highest ? highest : wide));
}

} // namespace detail

template <class T, detail::enable_if_integer_t<T> = 0> inline T abs(T x) {
  using M = detail::metal_int_t<T>;
  using U = std::make_unsigned_t<M>;
  // abs(INT_MIN) wraps to INT_MIN.
  return M(x) < 0 ? T(M(U(U(0) - U(x)))) : x;
}

// |x - y| without overflow; the result's bit pattern is the unsigned value.
template <class T, detail::enable_if_integer_t<T> = 0>
inline T absdiff(T x, T y) {
  using M = detail::metal_int_t<T>;
  using U = std::make_unsigned_t<M>;
  return M(x) > M(y) ? T(M(U(U(x) - U(y)))) : T(M(U(U(y) - U(x))));
}

template <class T, detail::enable_if_integer_t<T> = 0> inline T min(T x, T y) {
  using M = detail::metal_int_t<T>;
  return M(y) < M(x) ? y : x;
}

template <class T, detail::enable_if_integer_t<T> = 0> inline T max(T x, T y) {
  using M = detail::metal_int_t<T>;
  return M(x) < M(y) ? y : x;
}

template <class T, detail::enable_if_integer_t<T> = 0>
inline T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}

template <class T, detail::enable_if_integer_t<T> = 0>
inline T addsat(T x, T y) {
  using M = detail::metal_int_t<T>;
  // Exact in __int128 for every width, signed or unsigned.
  return detail::saturate_to<T>(__int128(M(x)) + __int128(M(y)));
}

template <class T, detail::enable_if_integer_t<T> = 0>
inline T subsat(T x, T y) {
  using M = detail::metal_int_t<T>;
  return detail::saturate_to<T>(__int128(M(x)) - __int128(M(y)));
}

// High half of the full-width product.
template <class T, detail::enable_if_integer_t<T> = 0>
inline T mulhi(T x, T y) {
  using M = detail::metal_int_t<T>;
  using W = detail::wide_t<T>;
  return T(M(W(W(M(x)) * W(M(y))) >> detail::bit_width<T>));
}

template <class T, detail::enable_if_integer_t<T> = 0>
inline T madhi(T x, T y, T z) {
  using M = detail::metal_int_t<T>;
  using U = std::make_unsigned_t<M>;
  return T(M(U(U(mulhi(x, y)) + U(z))));
}

// x * y + z computed exactly, then saturated to T.
template <class T, detail::enable_if_integer_t<T> = 0>
inline T madsat(T x, T y, T z) {
  using M = detail::metal_int_t<T>;
  if constexpr (detail::is_signed_int_v<T>) {
    // |x*y| <= 2^126 and |z| <= 2^63: the sum fits in __int128.
    return detail::saturate_to<T>(__int128(M(x)) * M(y) + M(z));
  } else {
    // x*y + z <= 2^128 - 2^64: fits in unsigned __int128.
    using W = unsigned __int128;
    return detail::saturate_to<T>(W(M(x)) * W(M(y)) + W(M(z)));
  }
}

// Rotate left by y modulo the width (a negative y rotates right).
template <class T, detail::enable_if_integer_t<T> = 0>
inline T rotate(T x, T y) {
  constexpr unsigned width = detail::bit_width<T>;
  const unsigned count = unsigned(detail::raw_bits(y) % width);
  const uint64_t bits = detail::raw_bits(x);
  const uint64_t rotated =
      count == 0 ? bits : (bits << count) | (bits >> (width - count));
  return T(detail::metal_int_t<T>(rotated & detail::low_mask(width)));
}

// clz(0) and ctz(0) are the width, as in Metal.
template <class T, detail::enable_if_integer_t<T> = 0> inline T clz(T x) {
  constexpr int width = detail::bit_width<T>;
  const uint64_t bits = detail::raw_bits(x);
  return T(bits == 0 ? width : __builtin_clzll(bits) - (64 - width));
}

template <class T, detail::enable_if_integer_t<T> = 0> inline T ctz(T x) {
  const uint64_t bits = detail::raw_bits(x);
  return T(bits == 0 ? detail::bit_width<T> : __builtin_ctzll(bits));
}

template <class T, detail::enable_if_integer_t<T> = 0> inline T popcount(T x) {
  return T(__builtin_popcountll(detail::raw_bits(x)));
}

template <class T, detail::enable_if_integer_t<T> = 0>
inline T reverse_bits(T x) {
  uint64_t bits = detail::raw_bits(x);
  uint64_t reversed = 0;
  for (int i = 0; i < detail::bit_width<T>; ++i) {
    reversed = (reversed << 1) | (bits & 1u);
    bits >>= 1;
  }
  return T(detail::metal_int_t<T>(reversed));
}

// Bits [offset, offset + bits) of x moved to the bottom; zero-extended for
// unsigned T, sign-extended from the top extracted bit for signed T;
// bits == 0 gives 0. offset + bits beyond the width is undefined in Metal.
template <class T, detail::enable_if_integer_t<T> = 0>
inline T extract_bits(T x, uint offset, uint bits) {
  constexpr unsigned width = detail::bit_width<T>;
  if (bits == 0 || offset >= width)
    return T(0);
  const uint64_t mask = detail::low_mask(bits);
  uint64_t field = (detail::raw_bits(x) >> offset) & mask;
  if (detail::is_signed_int_v<T> && bits < width &&
      ((field >> (bits - 1)) & 1u))
    field |= ~mask;
  return T(detail::metal_int_t<T>(field & detail::low_mask(width)));
}

// The low `bits` bits of insert placed at [offset, offset + bits) of base;
// bits == 0 returns base.
template <class T, detail::enable_if_integer_t<T> = 0>
inline T insert_bits(T base, T insert, uint offset, uint bits) {
  constexpr unsigned width = detail::bit_width<T>;
  if (bits == 0 || offset >= width)
    return base;
  const uint64_t mask = detail::low_mask(bits) << offset;
  const uint64_t merged = (detail::raw_bits(base) & ~mask) |
                          ((detail::raw_bits(insert) << offset) & mask);
  return T(detail::metal_int_t<T>(merged & detail::low_mask(width)));
}

} // namespace metal

#endif // ENIGMA_METAL_HOST_INTEGER_H
