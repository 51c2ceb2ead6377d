/*===- enigma_cuda_math.cuh - Metal math pieces CUDA lacks --------------===*
 *
 * as_type<T>(x), Metal's bit reinterpretation between types of one size
 * (the emitter prints it for arith.bitcast and enigma.as_type).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_MATH_CUH
#define ENIGMA_CUDA_MATH_CUH

template <class To, class From> __device__ inline To as_type(const From &x) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
  To out;
  memcpy(&out, &x, sizeof(To)); // a device builtin in NVRTC
  return out;
}

// C's float specials, which NVRTC does not predefine (the emitter prints
// NAN and INFINITY for such constants, as MSL spells them).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

// Metal's unpack_unorm4x8_srgb_to_float (op enigma.unpack_unorm4x8_srgb):
// bytes as unorm, r, g, b from sRGB to linear, alpha linear. Skipped when
// the shared Metal semantics library (metal_pack.h) already defines it.
#ifndef ENIGMA_METAL_PACK_H
__device__ inline float enigma_srgb_to_linear(float c) {
  return c <= 0.04045f ? c / 12.92f : powf((c + 0.055f) / 1.055f, 2.4f);
}
__device__ inline float4 unpack_unorm4x8_srgb_to_float(uint x) {
  return float4(enigma_srgb_to_linear(float(x & 0xffu) / 255.0f),
                enigma_srgb_to_linear(float((x >> 8) & 0xffu) / 255.0f),
                enigma_srgb_to_linear(float((x >> 16) & 0xffu) / 255.0f),
                float(x >> 24) / 255.0f);
}
#endif

#endif /* ENIGMA_CUDA_MATH_CUH */
