//===- enigma_cpu_vector_math.h - Vectorised float functions ----*- C++ -*-===//
//
// The semantics library computes float exp, log, sin, ... with the C
// library's scalar functions, so a thread loop that calls one runs scalar.
// Where glibc's vector math library (libmvec) links, the host compiler
// defines ENIGMA_CPU_LIBMVEC and links -lmvec (HostCompiler.cpp); these
// declarations then let g++ call its vector forms (8 lanes with AVX2, 16
// with AVX-512) from vectorised loops. They are within Metal's precise-mode
// error bounds, as the scalar functions are, but may differ from them in
// the last bit (docs/design/cpu-backend.md). Kernels are still compiled
// without fast math.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_VECTOR_MATH_H
#define ENIGMA_CPU_VECTOR_MATH_H

#if defined(ENIGMA_CPU_LIBMVEC) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__x86_64__)
// Declared here, without <math.h>: its global fmin, fmax, ... would make
// calls of Metal's functions ambiguous.

#define ENIGMA_CPU_VECTOR_FLOAT1(name)                                         \
  extern "C" float name(float) noexcept __attribute__((simd("notinbranch")));
#define ENIGMA_CPU_VECTOR_FLOAT2(name)                                         \
  extern "C" float name(float, float) noexcept                                 \
      __attribute__((simd("notinbranch")));

ENIGMA_CPU_VECTOR_FLOAT1(expf)
ENIGMA_CPU_VECTOR_FLOAT1(exp2f)
ENIGMA_CPU_VECTOR_FLOAT1(logf)
ENIGMA_CPU_VECTOR_FLOAT1(log2f)
ENIGMA_CPU_VECTOR_FLOAT1(log10f)
ENIGMA_CPU_VECTOR_FLOAT1(sinf)
ENIGMA_CPU_VECTOR_FLOAT1(cosf)
ENIGMA_CPU_VECTOR_FLOAT1(tanf)
ENIGMA_CPU_VECTOR_FLOAT1(asinf)
ENIGMA_CPU_VECTOR_FLOAT1(acosf)
ENIGMA_CPU_VECTOR_FLOAT1(atanf)
ENIGMA_CPU_VECTOR_FLOAT1(sinhf)
ENIGMA_CPU_VECTOR_FLOAT1(coshf)
ENIGMA_CPU_VECTOR_FLOAT1(tanhf)
ENIGMA_CPU_VECTOR_FLOAT1(asinhf)
ENIGMA_CPU_VECTOR_FLOAT1(acoshf)
ENIGMA_CPU_VECTOR_FLOAT1(atanhf)
ENIGMA_CPU_VECTOR_FLOAT2(powf)
ENIGMA_CPU_VECTOR_FLOAT2(atan2f)

#undef ENIGMA_CPU_VECTOR_FLOAT1
#undef ENIGMA_CPU_VECTOR_FLOAT2
#endif

#endif
