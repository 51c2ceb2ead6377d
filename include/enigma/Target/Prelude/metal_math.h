//===- metal_math.h - Metal's float functions on scalars --------*- C++ -*-===//
//
// Metal's floating-point functions for float, half and bfloat scalars.
// Vector forms are in metal_elementwise.h.
//
// - Functions whose Metal meaning is C's (sqrt, exp, round half away from
//   zero, fmin returning the non-NaN operand, ...) are C's float functions:
//   on the host the compiler's builtins (no C math header, see below), under
//   CUDA the overloads CUDA's math library already declares, brought into
//   namespace metal so both spellings name one function. rsqrt is CUDA's
//   rsqrtf there (fast, as Metal's default) and 1 / sqrt on the host.
// - Functions with Metal's own definition (sign, fract clamped below 1,
//   step, mix, smoothstep, ...) are written here once for every target.
// - half and bfloat compute in float and round once to their type.
//
// No C math or standard header is included on the host: generated code does
// `using namespace metal;`, and a global ::abs(int) or ::select would make
// calls such as abs(i) ambiguous.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_MATH_H
#define ENIGMA_METAL_MATH_H

#include "metal_types.h"

namespace metal {

//===--- C's float functions ----------------------------------------------===//

#if METAL_CUDA
#define METAL_C_FLOAT1(name, expr) using ::name;
#define METAL_C_FLOAT2(name, expr) using ::name;
#define METAL_C_FLOAT3(name, expr) using ::name;
#else
#define METAL_C_FLOAT1(name, expr)                                             \
  METAL_FUNC float name(float x) { return expr; }
#define METAL_C_FLOAT2(name, expr)                                             \
  METAL_FUNC float name(float x, float y) { return expr; }
#define METAL_C_FLOAT3(name, expr)                                             \
  METAL_FUNC float name(float x, float y, float z) { return expr; }
#endif

METAL_C_FLOAT1(sqrt, __builtin_sqrtf(x))
METAL_C_FLOAT1(rsqrt, 1.0f / __builtin_sqrtf(x))
METAL_C_FLOAT1(abs, __builtin_fabsf(x))
METAL_C_FLOAT1(fabs, __builtin_fabsf(x))
METAL_C_FLOAT1(ceil, __builtin_ceilf(x))
METAL_C_FLOAT1(floor, __builtin_floorf(x))
METAL_C_FLOAT1(round, __builtin_roundf(x)) // half away from zero
METAL_C_FLOAT1(rint, __builtin_rintf(x))   // half to even
METAL_C_FLOAT1(trunc, __builtin_truncf(x))
METAL_C_FLOAT1(exp, __builtin_expf(x))
METAL_C_FLOAT1(exp2, __builtin_exp2f(x))
METAL_C_FLOAT1(exp10, __builtin_powf(10.0f, x))
METAL_C_FLOAT1(log, __builtin_logf(x))
METAL_C_FLOAT1(log2, __builtin_log2f(x))
METAL_C_FLOAT1(log10, __builtin_log10f(x))
METAL_C_FLOAT1(sin, __builtin_sinf(x))
METAL_C_FLOAT1(cos, __builtin_cosf(x))
METAL_C_FLOAT1(tan, __builtin_tanf(x))
METAL_C_FLOAT1(asin, __builtin_asinf(x))
METAL_C_FLOAT1(acos, __builtin_acosf(x))
METAL_C_FLOAT1(atan, __builtin_atanf(x))
METAL_C_FLOAT1(sinh, __builtin_sinhf(x))
METAL_C_FLOAT1(cosh, __builtin_coshf(x))
METAL_C_FLOAT1(tanh, __builtin_tanhf(x))
METAL_C_FLOAT1(asinh, __builtin_asinhf(x))
METAL_C_FLOAT1(acosh, __builtin_acoshf(x))
METAL_C_FLOAT1(atanh, __builtin_atanhf(x))
METAL_C_FLOAT2(fmin, __builtin_fminf(x, y))
METAL_C_FLOAT2(fmax, __builtin_fmaxf(x, y))
METAL_C_FLOAT2(min, __builtin_fminf(x, y))
METAL_C_FLOAT2(max, __builtin_fmaxf(x, y))
METAL_C_FLOAT2(pow, __builtin_powf(x, y))
METAL_C_FLOAT2(fmod, __builtin_fmodf(x, y))
METAL_C_FLOAT2(atan2, __builtin_atan2f(x, y))
METAL_C_FLOAT2(copysign, __builtin_copysignf(x, y))
METAL_C_FLOAT3(fma, __builtin_fmaf(x, y, z))

#if METAL_CUDA
using ::isnan;
using ::isinf;
using ::isfinite;
using ::signbit;
#else
METAL_FUNC bool isnan(float x) { return __builtin_isnan(x); }
METAL_FUNC bool isinf(float x) { return __builtin_isinf(x); }
METAL_FUNC bool isfinite(float x) { return __builtin_isfinite(x); }
// The sign bit read as an integer: g++ 12 vectorising __builtin_signbit
// for AVX-512 failed with an internal compiler error (fuzz seed 932756).
METAL_FUNC bool signbit(float x) { return (detail::float_bits(x) >> 31) != 0; }
#endif

#undef METAL_C_FLOAT1
#undef METAL_C_FLOAT2
#undef METAL_C_FLOAT3

//===--- Metal's own float functions --------------------------------------===//

// +-1 by sign, x itself for +-0 (keeps -0.0), 0 for NaN.
METAL_FUNC float sign(float x) {
  return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : (x == 0.0f ? x : 0.0f);
}
METAL_FUNC float clamp(float x, float lo, float hi) {
  return fmin(fmax(x, lo), hi);
}
METAL_FUNC float saturate(float x) { return clamp(x, 0.0f, 1.0f); }
METAL_FUNC float step(float edge, float x) { return x < edge ? 0.0f : 1.0f; }
METAL_FUNC float mad(float a, float b, float c) { return a * b + c; }
METAL_FUNC float mix(float x, float y, float t) { return x + (y - x) * t; }
METAL_FUNC float smoothstep(float edge0, float edge1, float x) {
  const float t = clamp((x - edge0) / (edge1 - edge0), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
METAL_FUNC float powr(float x, float y) { return pow(x, y); } // x >= 0
METAL_FUNC bool isnormal(float x) {
  return isfinite(x) && fabs(x) >= 0x1p-126f;
}

// sinpi(x) = sin(pi x), cospi(x) = cos(pi x), tanpi(x) = tan(pi x), with
// OpenCL's special values, which Metal's follow: exact zeros at integers
// (sinpi(n) and tanpi(n) signed as OpenCL says, cospi(n + 0.5) = +0),
// tanpi(n + 0.5) = +inf for even n and -inf for odd n, NaN for +-inf. x is
// reduced exactly (fmod, and 1 - r by Sterbenz's lemma) to [0, 1/2], so no
// error of pi x grows with |x|; the rest is computed in double. CUDA's
// sinpi and cospi are its own (C's definition, the same values).
namespace detail {
#if METAL_CUDA
METAL_FUNC double sin_double(double x) { return ::sin(x); }
METAL_FUNC double cos_double(double x) { return ::cos(x); }
METAL_FUNC double tan_double(double x) { return ::tan(x); }
#else
METAL_FUNC double sin_double(double x) { return __builtin_sin(x); }
METAL_FUNC double cos_double(double x) { return __builtin_cos(x); }
METAL_FUNC double tan_double(double x) { return __builtin_tan(x); }
#endif
// A function, not a constant: CUDA would keep a namespace-scope double as a
// global in every module.
METAL_FUNC double pi_times(double a) { return 3.14159265358979323846 * a; }
} // namespace detail

#if METAL_CUDA
using ::cospi;
using ::sinpi;
#else
METAL_FUNC float sinpi(float x) {
  if (!isfinite(x))
    return x - x; // NaN
  float a = fabs(fmod(x, 2.0f)); // sin(pi x) = +-sin(pi a), a in [0, 2)
  float sign = signbit(x) ? -1.0f : 1.0f;
  if (a >= 1.0f) { // sin(pi (1 + b)) = -sin(pi b)
    a -= 1.0f;
    sign = -sign;
  }
  if (a > 0.5f) // sin(pi (1 - b)) = sin(pi b)
    a = 1.0f - a;
  if (a == 0.0f) // an integer: +0 for positive, -0 for negative
    return copysign(0.0f, x);
  return sign * static_cast<float>(detail::sin_double(detail::pi_times(a)));
}
METAL_FUNC float cospi(float x) {
  if (!isfinite(x))
    return x - x; // NaN
  float a = fabs(fmod(x, 2.0f)); // cos(pi x) = cos(pi a), a in [0, 2)
  if (a > 1.0f)                  // cos(pi (2 - b)) = cos(pi b)
    a = 2.0f - a;
  float sign = 1.0f;
  if (a > 0.5f) { // cos(pi (1 - b)) = -cos(pi b)
    a = 1.0f - a;
    sign = -1.0f;
  }
  if (a == 0.5f) // n + 0.5
    return 0.0f;
  return sign * static_cast<float>(detail::cos_double(detail::pi_times(a)));
}
#endif
METAL_FUNC float tanpi(float x) {
  if (!isfinite(x))
    return x - x; // NaN
  const float r = fmod(x, 1.0f); // tan has period pi: tan(pi x) = tan(pi r)
  float a = fabs(r);
  float sign = signbit(r) ? -1.0f : 1.0f;
  const bool odd = fmod(fabs(x) - a, 2.0f) != 0.0f; // of the integer part
  if (a == 0.0f) // n: copysign(0, n) for even n, copysign(0, -n) for odd
    return copysign(0.0f, odd ? -x : x);
  if (a == 0.5f) { // n + 0.5 (n = floor(x)): +inf for even n, -inf for odd
    const bool floorOdd = signbit(x) ? !odd : odd;
    const float inf = detail::float_from_bits(0x7f800000u);
    return floorOdd ? -inf : inf;
  }
  if (a > 0.5f) { // tan(pi (1 - b)) = -tan(pi b)
    a = 1.0f - a;
    sign = -sign;
  }
  return sign * static_cast<float>(detail::tan_double(detail::pi_times(a)));
}

// fract(x) = x - floor(x), clamped to the largest value below 1 of the
// type T; for half the clamp must follow the rounding (fract(-2^-20) would
// otherwise round up to 1.0h). Special values as in OpenCL, whose fract
// Metal's follows: NaN stays NaN (fmin would turn it into 0.99...), +-inf
// and +-0 give +-0.
namespace detail {
template <class T> METAL_FUNC T fract_as(float x, float below_one) {
  if (isnan(x))
    return T(x);
  if (isinf(x) || x == 0.0f)
    return T(copysign(0.0f, x));
  return T(fmin(static_cast<float>(T(x - floor(x))), below_one));
}
} // namespace detail
METAL_FUNC float fract(float x) {
  return detail::fract_as<float>(x, 0x1.fffffep-1f);
}

//===--- The float functions by name -------------------------------------===//

// Every float function above whose half / bfloat form computes in float
// and rounds once, and whose vector form applies it lane by lane
// (metal_elementwise.h), by operand count: X(T, name) for each. A new
// function is its float form above and its name here. abs, min, max and
// clamp (also integer functions) and fract and isnormal (their own half
// and bfloat forms) are not listed.
#define METAL_FLOAT_FUNCTIONS_1(T, X)                                          \
  X(T, sqrt) X(T, rsqrt) X(T, fabs) X(T, ceil) X(T, floor) X(T, round)         \
  X(T, rint) X(T, trunc) X(T, sign) X(T, saturate) X(T, exp) X(T, exp2)        \
  X(T, exp10) X(T, log) X(T, log2) X(T, log10) X(T, sin) X(T, cos) X(T, tan)   \
  X(T, sinpi) X(T, cospi) X(T, tanpi) X(T, asin) X(T, acos) X(T, atan)         \
  X(T, sinh) X(T, cosh) X(T, tanh) X(T, asinh) X(T, acosh) X(T, atanh)
#define METAL_FLOAT_FUNCTIONS_2(T, X)                                          \
  X(T, fmin) X(T, fmax) X(T, pow) X(T, powr) X(T, fmod) X(T, atan2)            \
  X(T, step) X(T, copysign)
#define METAL_FLOAT_FUNCTIONS_3(T, X)                                          \
  X(T, fma) X(T, mad) X(T, mix) X(T, smoothstep)
#define METAL_FLOAT_PREDICATES(T, X)                                           \
  X(T, isnan) X(T, isinf) X(T, isfinite) X(T, signbit)

//===--- half and bfloat: in float, rounded once --------------------------===//

#define METAL_VIA_FLOAT1(T, name)                                              \
  METAL_FUNC T name(T x) { return T(name(static_cast<float>(x))); }
#define METAL_VIA_FLOAT2(T, name)                                              \
  METAL_FUNC T name(T x, T y) {                                                \
    return T(name(static_cast<float>(x), static_cast<float>(y)));              \
  }
#define METAL_VIA_FLOAT3(T, name)                                              \
  METAL_FUNC T name(T x, T y, T z) {                                           \
    return T(name(static_cast<float>(x), static_cast<float>(y),                \
                  static_cast<float>(z)));                                     \
  }
#define METAL_VIA_FLOAT_PREDICATE(T, name)                                     \
  METAL_FUNC bool name(T x) { return name(static_cast<float>(x)); }
#define METAL_REDUCED_FLOAT_MATH(T)                                            \
  METAL_FLOAT_FUNCTIONS_1(T, METAL_VIA_FLOAT1)                                 \
  METAL_FLOAT_FUNCTIONS_2(T, METAL_VIA_FLOAT2)                                 \
  METAL_FLOAT_FUNCTIONS_3(T, METAL_VIA_FLOAT3)                                 \
  METAL_FLOAT_PREDICATES(T, METAL_VIA_FLOAT_PREDICATE)                         \
  METAL_VIA_FLOAT1(T, abs) METAL_VIA_FLOAT2(T, min) METAL_VIA_FLOAT2(T, max)   \
  METAL_VIA_FLOAT3(T, clamp)

// fract and isnormal depend on the type's own precision and exponent range
// (1e-6 is a normal float but a subnormal half).
#if METAL_HAS_HALF
METAL_REDUCED_FLOAT_MATH(half)
METAL_FUNC half fract(half x) {
  return detail::fract_as<half>(static_cast<float>(x), 0x1.ffcp-1f);
}
METAL_FUNC bool isnormal(half x) {
  const unsigned exponent = (detail::bit_cast<detail::u16>(x) >> 10) & 0x1fu;
  return exponent != 0 && exponent != 0x1fu;
}
#endif
#if METAL_HAS_BFLOAT
METAL_REDUCED_FLOAT_MATH(bfloat)
METAL_FUNC bfloat fract(bfloat x) {
  return detail::fract_as<bfloat>(static_cast<float>(x), 0x1.fep-1f);
}
METAL_VIA_FLOAT_PREDICATE(bfloat, isnormal)
#endif

#undef METAL_REDUCED_FLOAT_MATH
#undef METAL_VIA_FLOAT1
#undef METAL_VIA_FLOAT2
#undef METAL_VIA_FLOAT3
#undef METAL_VIA_FLOAT_PREDICATE

// Metal's precise:: and fast:: variants are the same functions here.
namespace precise {
using namespace metal;
}
namespace fast {
using namespace metal;
}

} // namespace metal

#endif // ENIGMA_METAL_MATH_H
