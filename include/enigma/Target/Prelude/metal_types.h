//===- metal_types.h - Metal's scalar types ---------------------*- C++ -*-===//
//
// Metal's scalar spellings, `half` (IEEE binary16) and `bfloat` (bfloat16),
// and the traits the rest of the library uses to tell scalar kinds apart.
//
// half and bfloat convert from float by rounding to nearest even, and every
// + - * / rounds once to the type, which is what a Metal GPU returns.
//   - Under CUDA they are cuda_fp16.h's __half and cuda_bf16.h's
//     __nv_bfloat16, whose arithmetic is the GPU's (add.f16, ...). The
//     includer includes those headers first, only when it needs them (they
//     are large); METAL_HAS_HALF / METAL_HAS_BFLOAT say whether it did.
//   - On the host they are 2-byte structs holding the bit pattern, so
//     buffers have Metal's layout; each operation is done in float and
//     rounded once (float has more than 2p+2 bits, so the double rounding
//     is harmless).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_TYPES_H
#define ENIGMA_METAL_TYPES_H

#include "metal_platform.h"

namespace metal {

// Metal's integer spellings. Metal `char` is signed 8-bit; functions and
// vector aliases use `signed char` (C++'s char is unsigned on aarch64).
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
static_assert(sizeof(long) == 8 && sizeof(ulong) == 8,
              "Metal long/ulong are 64-bit; this target's long is not");

#if METAL_CUDA

#if defined(__CUDA_FP16_TYPES_EXIST__)
#define METAL_HAS_HALF 1
typedef ::__half half;
#else
#define METAL_HAS_HALF 0
#endif
#if defined(__CUDA_BF16_TYPES_EXIST__)
#define METAL_HAS_BFLOAT 1
typedef ::__nv_bfloat16 bfloat;
#else
#define METAL_HAS_BFLOAT 0
#endif

#else // the host

#define METAL_HAS_HALF 1
#define METAL_HAS_BFLOAT 1

namespace detail {

// Round-to-nearest-even float -> binary16, written out so it works where the
// compiler has no _Float16 (clang 14 on x86-64). NaNs stay NaN (quietened).
inline u16 float_to_half_bits_soft(float value) {
  const u32 bits = float_bits(value);
  const u32 sign = (bits >> 16) & 0x8000u;
  const u32 magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: keep the top payload bits
    return u16(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) // >= 65520 (incl. inf) rounds to inf
    return u16(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) { // >= 2^-14: normal half
    const u32 lowest_kept_bit = (magnitude >> 13) & 1u;
    const u32 rounded = magnitude + 0xfffu + lowest_kept_bit;
    return u16(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude <= 0x33000000u) // <= 2^-25: the tie at 2^-25 goes to 0
    return u16(sign);
  // Subnormal half: count units of 2^-24, rounding to nearest even.
  const u32 exponent = magnitude >> 23;
  const u32 mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const u32 shift = 126u - exponent; // 14..24
  u32 units = mantissa >> shift;
  const u32 remainder = mantissa & ((1u << shift) - 1u);
  const u32 halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (units & 1u)))
    ++units; // may carry into the smallest normal, which encodes correctly
  return u16(sign | units);
}

inline float half_bits_to_float_soft(u16 h) {
  const u32 sign = u32(h & 0x8000u) << 16;
  const u32 exponent = (h >> 10) & 0x1fu;
  const u32 mantissa = h & 0x3ffu;
  if (exponent == 0x1fu)
    return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return float_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24 is exact in float.
  const float magnitude = float(mantissa) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

#if defined(__FLT16_MAX__) && !defined(ENIGMA_METAL_HOST_SOFT_HALF)
// The compiler's conversions are exact RNE and use F16C/FP16 instructions.
inline u16 float_to_half_bits(float value) {
  return bit_cast<u16>(static_cast<_Float16>(value));
}
inline float half_bits_to_float(u16 bits) {
  return static_cast<float>(bit_cast<_Float16>(bits));
}
#else
inline u16 float_to_half_bits(float value) {
  return float_to_half_bits_soft(value);
}
inline float half_bits_to_float(u16 bits) {
  return half_bits_to_float_soft(bits);
}
#endif

// bfloat16 is the top half of a float: round to nearest even on the 16
// dropped bits; NaNs are kept NaN (a carry could otherwise make them inf).
inline u16 float_to_bfloat_bits(float value) {
  const u32 bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return u16((bits >> 16) | 0x0040u);
  const u32 lowest_kept_bit = (bits >> 16) & 1u;
  return u16((bits + 0x7fffu + lowest_kept_bit) >> 16);
}

inline float bfloat_bits_to_float(u16 bits) {
  return float_from_bits(u32(bits) << 16);
}

// An integer as a float rounded to odd: truncated to 24 significant bits,
// the last one set when anything was dropped. Rounding that to bfloat's 8
// bits (or half's 11) gives the nearest-even result of a direct
// conversion; going through float with nearest-even would round twice.
template <class I> inline float int_to_float_round_odd(I value) {
  if constexpr (sizeof(I) <= 2) {
    return static_cast<float>(value);
  } else {
    typedef unsigned_t<I> U;
    const bool negative = value < 0;
    const U mag = negative ? U(U(0) - U(value)) : U(value);
    int width = 0;
    for (U m = mag; m; m >>= 1)
      ++width;
    if (width <= 24)
      return negative ? -static_cast<float>(mag) : static_cast<float>(mag);
    const int drop = width - 24;
    const U kept = (mag >> drop) | U((mag & ((U(1) << drop) - 1)) != 0);
    const float f = __builtin_ldexpf(static_cast<float>(kept), drop); // exact
    return negative ? -f : f;
  }
}

} // namespace detail

struct bfloat;

// IEEE binary16. Implicitly built from any arithmetic value (as in Metal) and
// implicitly read as float. Doubles go through float first; integers round
// once (int_to_float_round_odd).
struct half {
  detail::u16 bits;

  half() = default;
  half(float value) : bits(detail::float_to_half_bits(value)) {}
  half(double value) : half(static_cast<float>(value)) {}
  template <class I, detail::enable_if_t<detail::is_integral<I>::value> = 0>
  half(I value) : half(detail::int_to_float_round_odd(value)) {}
  explicit half(bfloat value);

  operator float() const { return detail::half_bits_to_float(bits); }

  static half from_bits(detail::u16 raw) {
    half h;
    h.bits = raw;
    return h;
  }
};

// bfloat16: same range as float, 8 significant bits.
struct bfloat {
  detail::u16 bits;

  bfloat() = default;
  bfloat(float value) : bits(detail::float_to_bfloat_bits(value)) {}
  bfloat(double value) : bfloat(static_cast<float>(value)) {}
  template <class I, detail::enable_if_t<detail::is_integral<I>::value> = 0>
  bfloat(I value) : bfloat(detail::int_to_float_round_odd(value)) {}
  explicit bfloat(half value) : bfloat(static_cast<float>(value)) {}

  operator float() const { return detail::bfloat_bits_to_float(bits); }

  static bfloat from_bits(detail::u16 raw) {
    bfloat b;
    b.bits = raw;
    return b;
  }
};

inline half::half(bfloat value) : half(static_cast<float>(value)) {}

static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "2-byte types");
static_assert(__is_trivially_copyable(half) &&
                  __is_trivially_copyable(bfloat),
              "buffers of half/bfloat are copied bytewise");

#endif // METAL_CUDA

namespace detail {

template <class T> struct is_reduced_float { enum : bool { value = false }; };
#if METAL_HAS_HALF
template <> struct is_reduced_float<half> { enum : bool { value = true }; };
#endif
#if METAL_HAS_BFLOAT
template <> struct is_reduced_float<bfloat> { enum : bool { value = true }; };
#endif

// Every type Metal treats as a scalar (vector lanes, broadcast operands).
template <class T> struct is_metal_scalar {
  enum : bool {
    value = is_arithmetic<T>::value || is_reduced_float<T>::value
  };
};

} // namespace detail

#if !METAL_CUDA

namespace detail {

// Result of a binary operation with a half/bfloat operand, Metal's rules:
// X op X -> X, X op integer -> X, X op float -> float. Any other mix (half
// with bfloat) is not an operation of these operators.
template <class A, class B> struct reduced_result {
  static constexpr bool a_reduced = is_reduced_float<A>::value;
  static constexpr bool b_reduced = is_reduced_float<B>::value;
  static constexpr bool valid = (a_reduced && is_same<A, B>::value) ||
                                (a_reduced && is_arithmetic<B>::value) ||
                                (b_reduced && is_arithmetic<A>::value);
  using type =
      conditional_t<is_floating_point<A>::value || is_floating_point<B>::value,
                    float, conditional_t<a_reduced, A, B>>;
};

template <class A, class B>
using reduced_result_t = enable_if_t<reduced_result<A, B>::valid,
                                     typename reduced_result<A, B>::type>;

template <class T> inline float to_float(T value) {
  return static_cast<float>(value);
}

} // namespace detail

// Arithmetic: both operands to float, compute, round once to the result.
#define METAL_REDUCED_ARITH(op)                                                \
  template <class A, class B, class R = detail::reduced_result_t<A, B>>       \
  inline R operator op(A a, B b) {                                             \
    return R(detail::to_float(a) op detail::to_float(b));                     \
  }
METAL_REDUCED_ARITH(+)
METAL_REDUCED_ARITH(-)
METAL_REDUCED_ARITH(*)
METAL_REDUCED_ARITH(/)
#undef METAL_REDUCED_ARITH

// Comparisons are exact in float (every half/bfloat is a float).
#define METAL_REDUCED_COMPARE(op)                                              \
  template <class A, class B, class = detail::reduced_result_t<A, B>>         \
  inline bool operator op(A a, B b) {                                          \
    return detail::to_float(a) op detail::to_float(b);                        \
  }
METAL_REDUCED_COMPARE(==)
METAL_REDUCED_COMPARE(!=)
METAL_REDUCED_COMPARE(<)
METAL_REDUCED_COMPARE(<=)
METAL_REDUCED_COMPARE(>)
METAL_REDUCED_COMPARE(>=)
#undef METAL_REDUCED_COMPARE

#define METAL_REDUCED_COMPOUND(op)                                             \
  template <class X, class B,                                                  \
            class = detail::enable_if_t<detail::is_reduced_float<X>::value>,   \
            class = detail::reduced_result_t<X, B>>                            \
  inline X &operator op##=(X &a, B b) {                                        \
    a = X(detail::to_float(a) op detail::to_float(b));                         \
    return a;                                                                  \
  }
METAL_REDUCED_COMPOUND(+)
METAL_REDUCED_COMPOUND(-)
METAL_REDUCED_COMPOUND(*)
METAL_REDUCED_COMPOUND(/)
#undef METAL_REDUCED_COMPOUND

// Negation flips the sign bit (exact, NaN payloads kept).
inline half operator-(half a) { return half::from_bits(a.bits ^ 0x8000u); }
inline bfloat operator-(bfloat a) {
  return bfloat::from_bits(a.bits ^ 0x8000u);
}
inline half operator+(half a) { return a; }
inline bfloat operator+(bfloat a) { return a; }

template <class X,
          class = detail::enable_if_t<detail::is_reduced_float<X>::value>>
inline X &operator++(X &a) {
  return a += 1;
}
template <class X,
          class = detail::enable_if_t<detail::is_reduced_float<X>::value>>
inline X &operator--(X &a) {
  return a -= 1;
}
template <class X,
          class = detail::enable_if_t<detail::is_reduced_float<X>::value>>
inline X operator++(X &a, int) {
  X old = a;
  a += 1;
  return old;
}
template <class X,
          class = detail::enable_if_t<detail::is_reduced_float<X>::value>>
inline X operator--(X &a, int) {
  X old = a;
  a -= 1;
  return old;
}

#endif // !METAL_CUDA

} // namespace metal

#endif // ENIGMA_METAL_TYPES_H
