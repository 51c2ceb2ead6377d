//===- metal_host_math.h - Metal float math on scalars ----------*- C++ -*-===//
//
// Metal's floating-point functions for float, half and bfloat scalars, with
// Metal's definitions (round is half away from zero, fract is clamped below
// 1, sign(NaN) is 0, ...). half/bfloat versions compute in float and round
// once. Compiler builtins are used so no C math header lands in the global
// namespace (see metal_host_types.h). Vector forms are in
// metal_host_elementwise.h.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_MATH_H
#define ENIGMA_METAL_HOST_MATH_H

#include "metal_host_types.h"

namespace metal {

namespace detail {
inline float sign_of(float x) {
  if (x > 0.0f)
    return 1.0f;
  if (x < 0.0f)
    return -1.0f;
  return x == 0.0f ? x : 0.0f; // keeps -0.0; NaN -> 0
}
inline float clamp_float(float x, float lo, float hi) {
  return __builtin_fminf(__builtin_fmaxf(x, lo), hi);
}
inline float smoothstep_float(float edge0, float edge1, float x) {
  const float t = clamp_float((x - edge0) / (edge1 - edge0), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
} // namespace detail

// One function for float, half and bfloat. `expr` uses float x (, y, z).
#define ENIGMA_METAL_FLOAT_FN1(name, expr)                                     \
  inline float name(float x) { return expr; }                                  \
  inline half name(half h) { return half(name(static_cast<float>(h))); }      \
  inline bfloat name(bfloat b) {                                               \
    return bfloat(name(static_cast<float>(b)));                                \
  }
#define ENIGMA_METAL_FLOAT_FN2(name, expr)                                     \
  inline float name(float x, float y) { return expr; }                         \
  inline half name(half a, half b) {                                           \
    return half(name(static_cast<float>(a), static_cast<float>(b)));          \
  }                                                                            \
  inline bfloat name(bfloat a, bfloat b) {                                     \
    return bfloat(name(static_cast<float>(a), static_cast<float>(b)));        \
  }
#define ENIGMA_METAL_FLOAT_FN3(name, expr)                                     \
  inline float name(float x, float y, float z) { return expr; }                \
  inline half name(half a, half b, half c) {                                   \
    return half(name(static_cast<float>(a), static_cast<float>(b),            \
                     static_cast<float>(c)));                                  \
  }                                                                            \
  inline bfloat name(bfloat a, bfloat b, bfloat c) {                           \
    return bfloat(name(static_cast<float>(a), static_cast<float>(b),          \
                       static_cast<float>(c)));                                \
  }
#define ENIGMA_METAL_FLOAT_PREDICATE(name, expr)                               \
  inline bool name(float x) { return expr; }                                   \
  inline bool name(half h) { return name(static_cast<float>(h)); }            \
  inline bool name(bfloat b) { return name(static_cast<float>(b)); }

ENIGMA_METAL_FLOAT_FN1(sqrt, __builtin_sqrtf(x))
ENIGMA_METAL_FLOAT_FN1(rsqrt, 1.0f / __builtin_sqrtf(x))
ENIGMA_METAL_FLOAT_FN1(abs, __builtin_fabsf(x))
ENIGMA_METAL_FLOAT_FN1(fabs, __builtin_fabsf(x))
ENIGMA_METAL_FLOAT_FN1(ceil, __builtin_ceilf(x))
ENIGMA_METAL_FLOAT_FN1(floor, __builtin_floorf(x))
ENIGMA_METAL_FLOAT_FN1(round, __builtin_roundf(x)) // half away from zero
ENIGMA_METAL_FLOAT_FN1(rint, __builtin_rintf(x))   // half to even
ENIGMA_METAL_FLOAT_FN1(trunc, __builtin_truncf(x))
ENIGMA_METAL_FLOAT_FN1(sign, detail::sign_of(x))
ENIGMA_METAL_FLOAT_FN1(saturate, detail::clamp_float(x, 0.0f, 1.0f))
ENIGMA_METAL_FLOAT_FN1(exp, __builtin_expf(x))
ENIGMA_METAL_FLOAT_FN1(exp2, __builtin_exp2f(x))
ENIGMA_METAL_FLOAT_FN1(exp10, __builtin_powf(10.0f, x))
ENIGMA_METAL_FLOAT_FN1(log, __builtin_logf(x))
ENIGMA_METAL_FLOAT_FN1(log2, __builtin_log2f(x))
ENIGMA_METAL_FLOAT_FN1(log10, __builtin_log10f(x))
ENIGMA_METAL_FLOAT_FN1(sin, __builtin_sinf(x))
ENIGMA_METAL_FLOAT_FN1(cos, __builtin_cosf(x))
ENIGMA_METAL_FLOAT_FN1(tan, __builtin_tanf(x))
ENIGMA_METAL_FLOAT_FN1(asin, __builtin_asinf(x))
ENIGMA_METAL_FLOAT_FN1(acos, __builtin_acosf(x))
ENIGMA_METAL_FLOAT_FN1(atan, __builtin_atanf(x))
ENIGMA_METAL_FLOAT_FN1(sinh, __builtin_sinhf(x))
ENIGMA_METAL_FLOAT_FN1(cosh, __builtin_coshf(x))
ENIGMA_METAL_FLOAT_FN1(tanh, __builtin_tanhf(x))
ENIGMA_METAL_FLOAT_FN1(asinh, __builtin_asinhf(x))
ENIGMA_METAL_FLOAT_FN1(acosh, __builtin_acoshf(x))
ENIGMA_METAL_FLOAT_FN1(atanh, __builtin_atanhf(x))

ENIGMA_METAL_FLOAT_FN2(fmin, __builtin_fminf(x, y))
ENIGMA_METAL_FLOAT_FN2(fmax, __builtin_fmaxf(x, y))
ENIGMA_METAL_FLOAT_FN2(min, __builtin_fminf(x, y))
ENIGMA_METAL_FLOAT_FN2(max, __builtin_fmaxf(x, y))
ENIGMA_METAL_FLOAT_FN2(pow, __builtin_powf(x, y))
ENIGMA_METAL_FLOAT_FN2(powr, __builtin_powf(x, y)) // x >= 0 by contract
ENIGMA_METAL_FLOAT_FN2(fmod, __builtin_fmodf(x, y))
ENIGMA_METAL_FLOAT_FN2(atan2, __builtin_atan2f(x, y))
ENIGMA_METAL_FLOAT_FN2(step, y < x ? 0.0f : 1.0f) // step(edge, x)
ENIGMA_METAL_FLOAT_FN2(copysign, __builtin_copysignf(x, y))

ENIGMA_METAL_FLOAT_FN3(clamp, detail::clamp_float(x, y, z))
ENIGMA_METAL_FLOAT_FN3(fma, __builtin_fmaf(x, y, z))
ENIGMA_METAL_FLOAT_FN3(mad, x * y + z)
ENIGMA_METAL_FLOAT_FN3(mix, x + (y - x) * z)
ENIGMA_METAL_FLOAT_FN3(smoothstep, detail::smoothstep_float(x, y, z))

ENIGMA_METAL_FLOAT_PREDICATE(isnan, __builtin_isnan(x))
ENIGMA_METAL_FLOAT_PREDICATE(isinf, __builtin_isinf(x))
ENIGMA_METAL_FLOAT_PREDICATE(isfinite, __builtin_isfinite(x))
// The sign bit read as an integer: g++ 12 vectorising __builtin_signbit
// for AVX-512 failed with an internal compiler error (fuzz seed 932756).
ENIGMA_METAL_FLOAT_PREDICATE(signbit, (detail::float_bits(x) >> 31) != 0)

#undef ENIGMA_METAL_FLOAT_FN1
#undef ENIGMA_METAL_FLOAT_FN2
#undef ENIGMA_METAL_FLOAT_FN3
#undef ENIGMA_METAL_FLOAT_PREDICATE

// isnormal depends on the type's own exponent range (1e-6 is a normal float
// but a subnormal half).
inline bool isnormal(float x) { return __builtin_isnormal(x); }
inline bool isnormal(half h) {
  const unsigned exponent = (h.bits >> 10) & 0x1fu;
  return exponent != 0 && exponent != 0x1fu;
}
inline bool isnormal(bfloat b) { return isnormal(static_cast<float>(b)); }

// fract(x) = x - floor(x), clamped to the largest value below 1 of the
// type; for half the clamp must follow the rounding (fract(-2^-20) would
// otherwise round up to 1.0h). Special values as in OpenCL, whose fract
// Metal's follows: NaN stays NaN (fmin would turn it into 0.99...), +-inf
// and +-0 give +-0.
namespace detail {
template <class T> inline T fract_as(float x, float below_one) {
  if (__builtin_isnan(x))
    return T(x);
  if (__builtin_isinf(x) || x == 0.0f)
    return T(__builtin_copysignf(0.0f, x));
  return T(__builtin_fminf(static_cast<float>(T(x - __builtin_floorf(x))),
                           below_one));
}
} // namespace detail
inline float fract(float x) {
  return detail::fract_as<float>(x, 0x1.fffffep-1f);
}
inline half fract(half h) {
  return detail::fract_as<half>(static_cast<float>(h), 0x1.ffcp-1f);
}
inline bfloat fract(bfloat b) {
  return detail::fract_as<bfloat>(static_cast<float>(b), 0x1.fep-1f);
}

// Metal's precise:: and fast:: variants are the same functions here.
namespace precise {
using namespace metal;
}
namespace fast {
using namespace metal;
}

} // namespace metal

#endif // ENIGMA_METAL_HOST_MATH_H
