//===- metal_fp8.h - The 8-bit floats e4m3 and e5m2 on every target -*- C++ -*-===//
//
// Enigma's two 8-bit float types (the OCP 8-bit floating point formats,
// docs/design/fp8.md), stored as one byte (uchar) on every target, and their
// conversions, defined once here:
//
//   f8e4m3: sign, 4 exponent bits (bias 7), 3 fraction bits; no infinities,
//           S.1111.111 is NaN; largest finite 448 (0x7e), smallest
//           subnormal 2^-9.
//   f8e5m2: sign, 5 exponent bits (bias 15), 2 fraction bits, IEEE-like:
//           S.11111.00 is infinity, S.11111.{01,10,11} NaN; largest finite
//           57344 (0x7b), smallest subnormal 2^-16.
//
// Decoding is exact (every value of either format is a half, a bfloat and
// a float). Encoding from float rounds to nearest, ties to even, as if the
// exponent were unbounded, and then:
//   plain form       a result beyond the largest finite (|x| > 464 for e4m3,
//                    |x| >= 61440 for e5m2, and infinities) is NaN for e4m3
//                    (no infinity to go to) and infinity for e5m2: IEEE 754
//                    overflow, MLIR's APFloat (the constant folder), CUDA's
//                    __NV_NOSAT and ml_dtypes / PyTorch;
//   saturating form  every |x| beyond the largest finite, infinities
//                    included, becomes the largest finite of its sign (OCP's
//                    saturation mode, PTX's cvt .satfinite, __NV_SATFINITE).
// A NaN encodes as S.1111.111 (e4m3) or S.11111.11 (e5m2) with the input's
// sign, in both forms; a NaN decodes to a quiet float NaN of the same sign
// whose payload is unspecified.
//
// This file is written in the subset of C++ that is also Metal Shading
// Language: it is included by the CPU and CUDA preludes (after `using
// namespace metal`), by the runtime's host conversions, and printed into
// MSL that uses 8-bit floats, with METAL_FUNC spelled `inline`
// (lib/Target/CFamily/CFamilyEmitter.cpp). Under CUDA on sm_89 and later
// the conversions run on the GPU's cvt instructions (e4m3x2 / e5m2x2);
// the overflow and NaN cases are then fixed up to the meaning above, so
// every target gives the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_FP8_H
#define ENIGMA_METAL_FP8_H

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define ENIGMA_FP8_CVT 1
#else
#define ENIGMA_FP8_CVT 0
#endif

// Rounds |x| (float bits `a`, below the overflow threshold, not NaN) to a
// format with Man fraction bits and exponent bias Bias: the code without
// its sign. Normal results keep the float's exponent field, rebiased;
// subnormal ones count units of 2^(1 - Bias - Man).
template <int Man, int Bias>
METAL_FUNC uint enigma_fp8_round(uint a) {
  const int exponent = int(a >> 23) - 127;
  if (exponent >= 1 - Bias) {
    const uint shift = uint(23 - Man);
    uint q = a >> shift;
    const uint rest = a & ((1u << shift) - 1u), half_unit = 1u << (shift - 1u);
    if (rest > half_unit || (rest == half_unit && (q & 1u) != 0u))
      q += 1u; // a carry moves into the exponent field, as it should
    return q - (uint(127 - Bias) << uint(Man));
  }
  const int shift = (23 - Man) + (1 - Bias - exponent);
  if (shift > 24) // below half the smallest subnormal (float subnormals too)
    return 0u;
  const uint full = (a & 0x7fffffu) | 0x800000u;
  uint q = full >> uint(shift);
  const uint rest = full & ((1u << uint(shift)) - 1u),
             half_unit = 1u << uint(shift - 1);
  if (rest > half_unit || (rest == half_unit && (q & 1u) != 0u))
    q += 1u; // rounding up from the largest subnormal gives the smallest normal
  return q;
}

// Float bits of the smallest magnitude that overflows each format under
// round to nearest even: 464 is the tie between 448 and the NaN pattern, and
// rounds to 448; 61440 ties between 57344 and 65536 and goes to infinity.
#define ENIGMA_F8E4M3_OVERFLOW 0x43e80001u // just above 464.0f
#define ENIGMA_F8E5M2_OVERFLOW 0x47700000u // 61440.0f

//===--- Decoding ----------------------------------------------------------===//

METAL_FUNC float enigma_f8e4m3_to_float_soft(uchar b) {
  const uint sign = uint(b & 0x80u) << 24, e = (uint(b) >> 3) & 15u,
             m = uint(b) & 7u;
  if ((b & 0x7fu) == 0x7fu)
    return as_type<float>(sign | 0x7fc00000u);
  if (e == 0u) // subnormal: m units of 2^-9
    return as_type<float>(sign | as_type<uint>(float(m) * 0.001953125f));
  return as_type<float>(sign | ((e + 120u) << 23) | (m << 20));
}

METAL_FUNC float enigma_f8e5m2_to_float_soft(uchar b) {
  const uint sign = uint(b & 0x80u) << 24, e = (uint(b) >> 2) & 31u,
             m = uint(b) & 3u;
  if (e == 31u)
    return as_type<float>(sign | (m == 0u ? 0x7f800000u : 0x7fc00000u));
  if (e == 0u) // subnormal: m units of 2^-16
    return as_type<float>(sign | as_type<uint>(float(m) * 0.0000152587890625f));
  return as_type<float>(sign | ((e + 112u) << 23) | (m << 21));
}

#if ENIGMA_FP8_CVT
// The GPU's conversion of the low byte of `b` through half (exact).
METAL_FUNC float enigma_fp8_hw_decode_e4m3(uchar b) {
  unsigned int h2;
  float f;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((unsigned short)b));
  asm("{.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.f32.f16 %0, lo;\n}"
      : "=f"(f) : "r"(h2));
  return f;
}
METAL_FUNC float enigma_fp8_hw_decode_e5m2(uchar b) {
  unsigned int h2;
  float f;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"((unsigned short)b));
  asm("{.reg .b16 lo, hi;\nmov.b32 {lo, hi}, %1;\ncvt.f32.f16 %0, lo;\n}"
      : "=f"(f) : "r"(h2));
  return f;
}
#endif

// On the GPU the NaNs take the library's path too, so that their sign is
// kept on every target.
METAL_FUNC float enigma_f8e4m3_to_float(uchar b) {
#if ENIGMA_FP8_CVT
  return (b & 0x7fu) == 0x7fu ? enigma_f8e4m3_to_float_soft(b)
                              : enigma_fp8_hw_decode_e4m3(b);
#else
  return enigma_f8e4m3_to_float_soft(b);
#endif
}

METAL_FUNC float enigma_f8e5m2_to_float(uchar b) {
#if ENIGMA_FP8_CVT
  return (b & 0x7fu) > 0x7cu ? enigma_f8e5m2_to_float_soft(b)
                             : enigma_fp8_hw_decode_e5m2(b);
#else
  return enigma_f8e5m2_to_float_soft(b);
#endif
}

//===--- Encoding ----------------------------------------------------------===//

METAL_FUNC uchar enigma_float_to_f8e4m3_soft(float x, bool saturate) {
  const uint u = as_type<uint>(x), sign = (u >> 24) & 0x80u,
             a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return uchar(sign | 0x7fu);
  if (a >= ENIGMA_F8E4M3_OVERFLOW) // infinities too
    return uchar(sign | (saturate ? 0x7eu : 0x7fu));
  return uchar(sign | enigma_fp8_round<3, 7>(a));
}

METAL_FUNC uchar enigma_float_to_f8e5m2_soft(float x, bool saturate) {
  const uint u = as_type<uint>(x), sign = (u >> 24) & 0x80u,
             a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return uchar(sign | 0x7fu);
  if (a >= ENIGMA_F8E5M2_OVERFLOW)
    return uchar(sign | (saturate ? 0x7bu : 0x7cu));
  return uchar(sign | enigma_fp8_round<2, 15>(a));
}

#if ENIGMA_FP8_CVT
// cvt.rn.satfinite rounds to nearest even and clamps to the largest finite;
// the plain form's overflow and every NaN are then set as defined above.
METAL_FUNC uchar enigma_fp8_hw_fixup(float x, unsigned short hw, bool saturate,
                                     uint overflow, uint plain_overflow) {
  const uint u = as_type<uint>(x), sign = (u >> 24) & 0x80u,
             a = u & 0x7fffffffu;
  uint r = uint(hw) & 0xffu;
  if (!saturate && a >= overflow)
    r = sign | plain_overflow;
  if (a > 0x7f800000u)
    r = sign | 0x7fu;
  return uchar(r);
}
METAL_FUNC uchar enigma_float_to_f8e4m3_hw(float x, bool saturate) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return enigma_fp8_hw_fixup(x, r, saturate, ENIGMA_F8E4M3_OVERFLOW, 0x7fu);
}
METAL_FUNC uchar enigma_float_to_f8e5m2_hw(float x, bool saturate) {
  unsigned short r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  return enigma_fp8_hw_fixup(x, r, saturate, ENIGMA_F8E5M2_OVERFLOW, 0x7cu);
}
#endif

METAL_FUNC uchar enigma_float_to_f8e4m3(float x) {
#if ENIGMA_FP8_CVT
  return enigma_float_to_f8e4m3_hw(x, false);
#else
  return enigma_float_to_f8e4m3_soft(x, false);
#endif
}
METAL_FUNC uchar enigma_float_to_f8e4m3_sat(float x) {
#if ENIGMA_FP8_CVT
  return enigma_float_to_f8e4m3_hw(x, true);
#else
  return enigma_float_to_f8e4m3_soft(x, true);
#endif
}
METAL_FUNC uchar enigma_float_to_f8e5m2(float x) {
#if ENIGMA_FP8_CVT
  return enigma_float_to_f8e5m2_hw(x, false);
#else
  return enigma_float_to_f8e5m2_soft(x, false);
#endif
}
METAL_FUNC uchar enigma_float_to_f8e5m2_sat(float x) {
#if ENIGMA_FP8_CVT
  return enigma_float_to_f8e5m2_hw(x, true);
#else
  return enigma_float_to_f8e5m2_soft(x, true);
#endif
}

//===--- Vector forms: lane by lane ----------------------------------------===//

#define ENIGMA_FP8_VECTOR_FORMS(NAME, FROM, TO)                                \
  METAL_FUNC TO##2 NAME(FROM##2 v) { return TO##2(NAME(v.x), NAME(v.y)); }     \
  METAL_FUNC TO##3 NAME(FROM##3 v) {                                           \
    return TO##3(NAME(v.x), NAME(v.y), NAME(v.z));                             \
  }                                                                            \
  METAL_FUNC TO##4 NAME(FROM##4 v) {                                           \
    return TO##4(NAME(v.x), NAME(v.y), NAME(v.z), NAME(v.w));                  \
  }
ENIGMA_FP8_VECTOR_FORMS(enigma_f8e4m3_to_float, uchar, float)
ENIGMA_FP8_VECTOR_FORMS(enigma_f8e5m2_to_float, uchar, float)
ENIGMA_FP8_VECTOR_FORMS(enigma_float_to_f8e4m3, float, uchar)
ENIGMA_FP8_VECTOR_FORMS(enigma_float_to_f8e4m3_sat, float, uchar)
ENIGMA_FP8_VECTOR_FORMS(enigma_float_to_f8e5m2, float, uchar)
ENIGMA_FP8_VECTOR_FORMS(enigma_float_to_f8e5m2_sat, float, uchar)
#undef ENIGMA_FP8_VECTOR_FORMS

// half -> float for the encoders (a template: the targets declare half
// after this file). CUDA's conversion (cvt.f32.f16) makes every NaN
// positive; the encodings keep a NaN's sign, as the other targets do.
template <class Half> METAL_FUNC float enigma_fp8_widen(Half h) {
  const float f = float(h);
#if ENIGMA_FP8_CVT
  if (isnan(f))
    return as_type<float>(0x7fc00000u |
                          (uint(as_type<ushort>(h) & 0x8000u) << 16));
#endif
  return f;
}

// By format code (0: e4m3, 1: e5m2), for templates (the mma helpers).
template <int Fmt> METAL_FUNC float enigma_fp8_to_float(uchar b) {
  return Fmt == 0 ? enigma_f8e4m3_to_float(b) : enigma_f8e5m2_to_float(b);
}

#endif // ENIGMA_METAL_FP8_H
