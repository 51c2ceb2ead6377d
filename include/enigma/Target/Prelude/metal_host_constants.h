//===- metal_host_constants.h - Metal's predefined constants ----*- C++ -*-===//
//
// The numeric macros of Metal's standard library that generated code may
// name. Each is defined only if absent; INFINITY and NAN are spelled exactly
// as glibc's <math.h> spells them so a later include of it does not warn.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_HOST_CONSTANTS_H
#define ENIGMA_METAL_HOST_CONSTANTS_H

#ifndef INFINITY
# define INFINITY (__builtin_inff ())
#endif
#ifndef NAN
# define NAN (__builtin_nanf (""))
#endif
#ifndef FLT_MAX
#define FLT_MAX __FLT_MAX__
#endif
#ifndef FLT_MIN
#define FLT_MIN __FLT_MIN__
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON __FLT_EPSILON__
#endif
#define HALF_MAX (::metal::half(0x1.ffcp15f))
#define HALF_MIN (::metal::half(0x1p-14f))
#define HALF_EPSILON (::metal::half(0x1p-10f))
#define M_PI_F 3.14159265358979323846264338327950288f
#define M_PI_H (::metal::half(M_PI_F))
#define M_E_F 2.71828182845904523536028747135266250f

#endif // ENIGMA_METAL_HOST_CONSTANTS_H
