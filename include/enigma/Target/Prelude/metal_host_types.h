//===- metal_host_types.h - Metal scalar types on the host ------*- C++ -*-===//
//
// Metal's scalar spellings plus `half` (IEEE binary16) and `bfloat`
// (bfloat16). Both are 2-byte structs holding the bit pattern, so buffers of
// them have Metal's layout, and every arithmetic operation is done in float
// and rounded once, which is what a Metal GPU returns for + - * / (float has
// more than 2p+2 bits, so the double rounding is harmless).
//
// No C math or stdlib header is included on purpose: generated code does
// `using namespace metal;`, and a global ::abs(int) or ::select would make
// calls such as abs(i) ambiguous.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_TYPES_H
#define ENIGMA_METAL_HOST_TYPES_H

#include <stdint.h>

#include <type_traits>

namespace metal {

// Metal's integer spellings. Metal `char` is signed 8-bit; C++ `char` is
// unsigned on aarch64, so functions and vector aliases use `signed char`.
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
static_assert(sizeof(long) == 8 && sizeof(ulong) == 8,
              "Metal long/ulong are 64-bit; this host's long is not");

namespace detail {

inline uint32_t float_bits(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, sizeof bits);
  return bits;
}

inline float float_from_bits(uint32_t bits) {
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

// Round-to-nearest-even float -> binary16, written out so it works where the
// compiler has no _Float16 (clang 14 on x86-64). NaNs stay NaN (quietened).
inline uint16_t float_to_half_bits_soft(float value) {
  const uint32_t bits = float_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: keep the top payload bits
    return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) // >= 65520 (incl. inf) rounds to inf
    return uint16_t(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) { // >= 2^-14: normal half
    const uint32_t lowest_kept_bit = (magnitude >> 13) & 1u;
    const uint32_t rounded = magnitude + 0xfffu + lowest_kept_bit;
    return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude <= 0x33000000u) // <= 2^-25: the tie at 2^-25 goes to 0
    return uint16_t(sign);
  // Subnormal half: count units of 2^-24, rounding to nearest even.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent; // 14..24
  uint32_t units = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (units & 1u)))
    ++units; // may carry into the smallest normal, which encodes correctly
  return uint16_t(sign | units);
}

inline float half_bits_to_float_soft(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
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
inline uint16_t float_to_half_bits(float value) {
  const _Float16 h = static_cast<_Float16>(value);
  uint16_t bits;
  __builtin_memcpy(&bits, &h, sizeof bits);
  return bits;
}
inline float half_bits_to_float(uint16_t bits) {
  _Float16 h;
  __builtin_memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}
#else
inline uint16_t float_to_half_bits(float value) {
  return float_to_half_bits_soft(value);
}
inline float half_bits_to_float(uint16_t bits) {
  return half_bits_to_float_soft(bits);
}
#endif

// bfloat16 is the top half of a float: round to nearest even on the 16
// dropped bits; NaNs are kept NaN (a carry could otherwise make them inf).
inline uint16_t float_to_bfloat_bits(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x0040u);
  const uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return uint16_t((bits + 0x7fffu + lowest_kept_bit) >> 16);
}

inline float bfloat_bits_to_float(uint16_t bits) {
  return float_from_bits(uint32_t(bits) << 16);
}

// An integer as a float rounded to odd: truncated to 24 significant bits,
// the last one set when anything was dropped. Rounding that to bfloat's 8
// bits (or half's 11) gives the nearest-even result of a direct
// conversion; going through float with nearest-even would round twice.
template <class I> inline float int_to_float_round_odd(I value) {
  if constexpr (sizeof(I) <= 2) {
    return static_cast<float>(value);
  } else {
    using U = std::make_unsigned_t<I>;
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
  uint16_t bits;

  half() = default;
  half(float value) : bits(detail::float_to_half_bits(value)) {}
  half(double value) : half(static_cast<float>(value)) {}
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  half(I value) : half(detail::int_to_float_round_odd(value)) {}
  explicit half(bfloat value);

  operator float() const { return detail::half_bits_to_float(bits); }

  static half from_bits(uint16_t raw) {
    half h;
    h.bits = raw;
    return h;
  }
};

// bfloat16: same range as float, 8 significant bits.
struct bfloat {
  uint16_t bits;

  bfloat() = default;
  bfloat(float value) : bits(detail::float_to_bfloat_bits(value)) {}
  bfloat(double value) : bfloat(static_cast<float>(value)) {}
  template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
  bfloat(I value) : bfloat(detail::int_to_float_round_odd(value)) {}
  explicit bfloat(half value) : bfloat(static_cast<float>(value)) {}

  operator float() const { return detail::bfloat_bits_to_float(bits); }

  static bfloat from_bits(uint16_t raw) {
    bfloat b;
    b.bits = raw;
    return b;
  }
};

inline half::half(bfloat value) : half(static_cast<float>(value)) {}

static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "2-byte types");
static_assert(std::is_trivially_copyable<half>::value &&
                  std::is_trivially_copyable<bfloat>::value,
              "buffers of half/bfloat are copied bytewise");

namespace detail {

template <class T>
constexpr bool is_reduced_float_v =
    std::is_same<T, half>::value || std::is_same<T, bfloat>::value;

// Every type Metal treats as a scalar (vector lanes, broadcast operands).
template <class T>
constexpr bool is_metal_scalar_v =
    std::is_arithmetic<T>::value || is_reduced_float_v<T>;

template <class T>
constexpr bool is_metal_floating_v =
    std::is_floating_point<T>::value || is_reduced_float_v<T>;

// Result of a binary operation with a half/bfloat operand, Metal's rules:
// X op X -> X, X op integer -> X, X op float -> float. Any other mix (half
// with bfloat) is not an operation of these operators.
template <class A, class B> struct reduced_result {
  static constexpr bool a_reduced = is_reduced_float_v<A>;
  static constexpr bool b_reduced = is_reduced_float_v<B>;
  static constexpr bool valid =
      (a_reduced && std::is_same<A, B>::value) ||
      (a_reduced && std::is_arithmetic<B>::value) ||
      (b_reduced && std::is_arithmetic<A>::value);
  using type = std::conditional_t<
      std::is_floating_point<A>::value || std::is_floating_point<B>::value,
      float, std::conditional_t<a_reduced, A, B>>;
};

template <class A, class B>
using reduced_result_t = std::enable_if_t<reduced_result<A, B>::valid,
                                          typename reduced_result<A, B>::type>;

template <class T> inline float to_float(T value) {
  return static_cast<float>(value);
}

} // namespace detail

// Arithmetic: both operands to float, compute, round once to the result.
#define ENIGMA_METAL_REDUCED_ARITH(op)                                         \
  template <class A, class B, class R = detail::reduced_result_t<A, B>>       \
  inline R operator op(A a, B b) {                                             \
    return R(detail::to_float(a) op detail::to_float(b));                     \
  }
ENIGMA_METAL_REDUCED_ARITH(+)
ENIGMA_METAL_REDUCED_ARITH(-)
ENIGMA_METAL_REDUCED_ARITH(*)
ENIGMA_METAL_REDUCED_ARITH(/)
#undef ENIGMA_METAL_REDUCED_ARITH

// Comparisons are exact in float (every half/bfloat is a float).
#define ENIGMA_METAL_REDUCED_COMPARE(op)                                       \
  template <class A, class B, class = detail::reduced_result_t<A, B>>         \
  inline bool operator op(A a, B b) {                                          \
    return detail::to_float(a) op detail::to_float(b);                        \
  }
ENIGMA_METAL_REDUCED_COMPARE(==)
ENIGMA_METAL_REDUCED_COMPARE(!=)
ENIGMA_METAL_REDUCED_COMPARE(<)
ENIGMA_METAL_REDUCED_COMPARE(<=)
ENIGMA_METAL_REDUCED_COMPARE(>)
ENIGMA_METAL_REDUCED_COMPARE(>=)
#undef ENIGMA_METAL_REDUCED_COMPARE

#define ENIGMA_METAL_REDUCED_COMPOUND(op)                                      \
  template <class X, class B,                                                  \
            class = std::enable_if_t<detail::is_reduced_float_v<X>>,           \
            class = detail::reduced_result_t<X, B>>                            \
  inline X &operator op##=(X &a, B b) {                                        \
    a = X(detail::to_float(a) op detail::to_float(b));                        \
    return a;                                                                  \
  }
ENIGMA_METAL_REDUCED_COMPOUND(+)
ENIGMA_METAL_REDUCED_COMPOUND(-)
ENIGMA_METAL_REDUCED_COMPOUND(*)
ENIGMA_METAL_REDUCED_COMPOUND(/)
#undef ENIGMA_METAL_REDUCED_COMPOUND

// Negation flips the sign bit (exact, NaN payloads kept).
inline half operator-(half a) { return half::from_bits(a.bits ^ 0x8000u); }
inline bfloat operator-(bfloat a) {
  return bfloat::from_bits(a.bits ^ 0x8000u);
}
inline half operator+(half a) { return a; }
inline bfloat operator+(bfloat a) { return a; }

template <class X, class = std::enable_if_t<detail::is_reduced_float_v<X>>>
inline X &operator++(X &a) {
  return a += 1;
}
template <class X, class = std::enable_if_t<detail::is_reduced_float_v<X>>>
inline X &operator--(X &a) {
  return a -= 1;
}
template <class X, class = std::enable_if_t<detail::is_reduced_float_v<X>>>
inline X operator++(X &a, int) {
  X old = a;
  a += 1;
  return old;
}
template <class X, class = std::enable_if_t<detail::is_reduced_float_v<X>>>
inline X operator--(X &a, int) {
  X old = a;
  a -= 1;
  return old;
}

} // namespace metal

#endif // ENIGMA_METAL_HOST_TYPES_H
