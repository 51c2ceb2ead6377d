//===- metal_pack.h - Metal's pack/unpack and as_type -----------*- C++ -*-===//
//
// Normalized-integer packing with Metal's conversion rules:
//   snorm N bits: rint(clamp(f, -1, 1) * (2^(N-1) - 1))
//   unorm N bits: rint(clamp(f,  0, 1) * (2^N - 1))
// rounding to nearest even, NaN converting to 0; unpacking snorm gives
// max(-1, i / (2^(N-1) - 1)). Lane 0 (x) sits in the lowest bits. The sRGB
// forms convert r, g, b with the sRGB transfer curve and keep alpha linear.
// Also as_type<T>(x), Metal's bit reinterpretation.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_PACK_H
#define ENIGMA_METAL_PACK_H

#include "metal_math.h"
#include "metal_vector.h"

namespace metal {

// Reinterpret the bits of x as To; both must have the same size.
template <class To, class From> METAL_FUNC To as_type(const From &x) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
  return detail::bit_cast<To>(x);
}

namespace detail {

METAL_FUNC uint float_to_snorm(float f, float scale, uint mask) {
  if (isnan(f))
    return 0;
  const float clamped = fmin(fmax(f, -1.0f), 1.0f);
  return uint(int(rint(clamped * scale))) & mask;
}

METAL_FUNC uint float_to_unorm(float f, float scale) {
  if (isnan(f))
    return 0;
  const float clamped = fmin(fmax(f, 0.0f), 1.0f);
  return uint(rint(clamped * scale));
}

METAL_FUNC float snorm_to_float(int value, float scale) {
  return fmax(-1.0f, float(value) / scale);
}

// Linear -> sRGB encoding of one colour channel in [0, 1].
METAL_FUNC float linear_to_srgb(float c) {
  if (isnan(c))
    return 0.0f;
  c = fmin(fmax(c, 0.0f), 1.0f);
  if (c <= 0.0031308f)
    return c * 12.92f;
  return 1.055f * pow(c, 1.0f / 2.4f) - 0.055f;
}

METAL_FUNC float srgb_to_linear(float c) {
  if (c <= 0.04045f)
    return c / 12.92f;
  return pow((c + 0.055f) / 1.055f, 2.4f);
}

} // namespace detail

METAL_FUNC uint pack_float_to_snorm4x8(float4 v) {
  uint packed = 0;
  for (int i = 0; i < 4; ++i)
    packed |= detail::float_to_snorm(v[i], 127.0f, 0xffu) << (8 * i);
  return packed;
}

METAL_FUNC uint pack_float_to_unorm4x8(float4 v) {
  uint packed = 0;
  for (int i = 0; i < 4; ++i)
    packed |= detail::float_to_unorm(v[i], 255.0f) << (8 * i);
  return packed;
}

METAL_FUNC uint pack_float_to_snorm2x16(float2 v) {
  return detail::float_to_snorm(v.x, 32767.0f, 0xffffu) |
         (detail::float_to_snorm(v.y, 32767.0f, 0xffffu) << 16);
}

METAL_FUNC uint pack_float_to_unorm2x16(float2 v) {
  return detail::float_to_unorm(v.x, 65535.0f) |
         (detail::float_to_unorm(v.y, 65535.0f) << 16);
}

METAL_FUNC uint pack_float_to_srgb_unorm4x8(float4 v) {
  return pack_float_to_unorm4x8(float4(detail::linear_to_srgb(v.x),
                                       detail::linear_to_srgb(v.y),
                                       detail::linear_to_srgb(v.z), v.w));
}

// r, g, b in 10 bits each (bits 0-29), alpha in the top 2 bits.
METAL_FUNC uint pack_float_to_unorm10a2(float4 v) {
  return detail::float_to_unorm(v.x, 1023.0f) |
         (detail::float_to_unorm(v.y, 1023.0f) << 10) |
         (detail::float_to_unorm(v.z, 1023.0f) << 20) |
         (detail::float_to_unorm(v.w, 3.0f) << 30);
}

METAL_FUNC float4 unpack_snorm4x8_to_float(uint packed) {
  float4 result;
  for (int i = 0; i < 4; ++i)
    result[i] = detail::snorm_to_float(
        int(static_cast<signed char>((packed >> (8 * i)) & 0xffu)), 127.0f);
  return result;
}

METAL_FUNC float4 unpack_unorm4x8_to_float(uint packed) {
  float4 result;
  for (int i = 0; i < 4; ++i)
    result[i] = float((packed >> (8 * i)) & 0xffu) / 255.0f;
  return result;
}

METAL_FUNC float2 unpack_snorm2x16_to_float(uint packed) {
  return float2(
      detail::snorm_to_float(int(static_cast<short>(packed & 0xffffu)),
                             32767.0f),
      detail::snorm_to_float(int(static_cast<short>(packed >> 16)), 32767.0f));
}

METAL_FUNC float2 unpack_unorm2x16_to_float(uint packed) {
  return float2(float(packed & 0xffffu) / 65535.0f,
                float(packed >> 16) / 65535.0f);
}

METAL_FUNC float4 unpack_unorm4x8_srgb_to_float(uint packed) {
  const float4 encoded = unpack_unorm4x8_to_float(packed);
  return float4(detail::srgb_to_linear(encoded.x),
                detail::srgb_to_linear(encoded.y),
                detail::srgb_to_linear(encoded.z), encoded.w);
}

METAL_FUNC float4 unpack_unorm10a2_to_float(uint packed) {
  return float4(float(packed & 0x3ffu) / 1023.0f,
                float((packed >> 10) & 0x3ffu) / 1023.0f,
                float((packed >> 20) & 0x3ffu) / 1023.0f,
                float(packed >> 30) / 3.0f);
}

} // namespace metal

#endif // ENIGMA_METAL_PACK_H
