//===- metal_constants.h - Metal's predefined constants ---------*- C++ -*-===//
//
// The numeric macros of Metal's standard library that generated code may
// name. Each C one is defined only if absent; on the host INFINITY and NAN
// are spelled exactly as glibc's <math.h> spells them so a later include of
// it does not warn. The float limits are written as hex literals: NVRTC
// predefines no __FLT_MAX__.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_CONSTANTS_H
#define ENIGMA_METAL_CONSTANTS_H

#include "metal_types.h"

#if METAL_DEVICE_CODE
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#else
#ifndef INFINITY
# define INFINITY (__builtin_inff ())
#endif
#ifndef NAN
# define NAN (__builtin_nanf (""))
#endif
#endif

#ifndef FLT_MAX
#define FLT_MAX 0x1.fffffep127f
#endif
#ifndef FLT_MIN
#define FLT_MIN 0x1p-126f
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 0x1p-23f
#endif
#if METAL_HAS_HALF
#define HALF_MAX (::metal::half(0x1.ffcp15f))
#define HALF_MIN (::metal::half(0x1p-14f))
#define HALF_EPSILON (::metal::half(0x1p-10f))
#endif
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_E_F 2.71828182845904523536028747135266250f
#if METAL_HAS_HALF
#define M_PI_H (::metal::half(M_PI_F))
#endif

#endif // ENIGMA_METAL_CONSTANTS_H
