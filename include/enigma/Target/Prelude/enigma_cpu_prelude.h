//===- enigma_cpu_prelude.h - Included by generated host C++ ----*- C++ -*-===//
//
// The one header the CPU emitter's output includes: the kernel ABI, Metal's
// value semantics (the library shared with the CUDA backend,
// metal_semantics.h) and what only the host has: thread-serialised simd
// functions, atomics, vector memory, async copies and
// matrix products.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_PRELUDE_H
#define ENIGMA_CPU_PRELUDE_H

#include <stdint.h>
#include <string.h>

#include "enigma_cpu_abi.h"
#include "enigma_cpu_vector_math.h"
#include "metal_semantics.h"
#include "enigma_cpu_atomics.h"
#include "enigma_cpu_simd.h"
#include "enigma_cpu_vector_memory.h"
#include "enigma_cpu_async_copy.h"

using namespace metal;
#include "metal_total_division.h"
#include "metal_float_to_int.h"
#include "enigma_cpu_mma.h"

// Marks kernel buffer pointers as not aliasing, as Metal buffers are assumed.
#define ENIGMA_CPU_RESTRICT __restrict__

// Bounds of loops over a partial edge threadgroup.
static inline uint32_t enigma_min_u32(uint32_t a, uint32_t b) {
  return a < b ? a : b;
}

#endif // ENIGMA_CPU_PRELUDE_H
