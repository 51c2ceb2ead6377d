//===- enigma_cpu_vector_memory.h - Vector loads/stores on the host -*- C++ -*-===//
//
// What the CPU flavour prints for a vector access of a scalar buffer
// (lib/Target/CFamily/EmitVectorMemory.cpp): a memcpy of the vector's bytes.
// Casting `float *` to `float4 *` would break C++'s aliasing rules; memcpy
// of a constant size is well defined and the compiler still turns it into
// one vector move. The pointer needs no particular alignment here.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_VECTOR_MEMORY_H
#define ENIGMA_CPU_VECTOR_MEMORY_H

#include <string.h>
#include <type_traits>

/// Lanes 0..N-1 of the vector V from p[0..N-1].
template <class V, class T> static inline V enigma_vector_load(const T *p) {
  static_assert(std::is_trivially_copyable<V>::value, "vector type");
  V v;
  memcpy(&v, p, sizeof(typename V::value_type) * V::lanes);
  return v;
}

/// Writes the lanes of v to p[0..N-1].
template <class V, class T> static inline void enigma_vector_store(T *p,
                                                                   const V &v) {
  static_assert(std::is_trivially_copyable<V>::value, "vector type");
  memcpy(p, &v, sizeof(typename V::value_type) * V::lanes);
}

#endif // ENIGMA_CPU_VECTOR_MEMORY_H
