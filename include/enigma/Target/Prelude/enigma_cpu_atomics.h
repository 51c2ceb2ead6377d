//===- enigma_cpu_atomics.h - Metal's atomic functions on the host -*- C++ -*-===//
//
// The atomic functions generated host C++ calls, with Metal's names and
// memory orders, on plain pointers (the CPU emitter casts &buf[i] to int*,
// uint* or float*). CPU threadgroups run in parallel on several cores, so
// these are real atomics (GCC/Clang __atomic builtins).
//
// - Loads use the acquire half of an order and stores the release half, as
//   C++ compilers do for orders that do not apply.
// - The weak compare-exchange is implemented with the strong builtin: it
//   never fails spuriously (which the weak contract allows).
// - float add/sub and min/max and integer min/max are compare-exchange
//   loops; 64-bit integers work as 32-bit ones.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_ATOMICS_H
#define ENIGMA_CPU_ATOMICS_H

#include <type_traits>

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

namespace enigma_cpu_atomics {

inline int rmw_order(memory_order o) {
  switch (o) {
  case memory_order_relaxed: return __ATOMIC_RELAXED;
  case memory_order_acquire: return __ATOMIC_ACQUIRE;
  case memory_order_release: return __ATOMIC_RELEASE;
  case memory_order_acq_rel: return __ATOMIC_ACQ_REL;
  default: return __ATOMIC_SEQ_CST;
  }
}
inline int load_order(memory_order o) {
  switch (o) {
  case memory_order_relaxed:
  case memory_order_release: return __ATOMIC_RELAXED;
  case memory_order_acquire:
  case memory_order_acq_rel: return __ATOMIC_ACQUIRE;
  default: return __ATOMIC_SEQ_CST;
  }
}
inline int store_order(memory_order o) {
  switch (o) {
  case memory_order_relaxed:
  case memory_order_acquire: return __ATOMIC_RELAXED;
  case memory_order_release:
  case memory_order_acq_rel: return __ATOMIC_RELEASE;
  default: return __ATOMIC_SEQ_CST;
  }
}
/// The weakest order at least as strong as both.
inline memory_order combine(memory_order a, memory_order b) {
  if (a == memory_order_seq_cst || b == memory_order_seq_cst)
    return memory_order_seq_cst;
  bool acquire = a == memory_order_acquire || a == memory_order_acq_rel ||
                 b == memory_order_acquire || b == memory_order_acq_rel;
  bool release = a == memory_order_release || a == memory_order_acq_rel ||
                 b == memory_order_release || b == memory_order_acq_rel;
  return acquire && release ? memory_order_acq_rel
         : acquire          ? memory_order_acquire
         : release          ? memory_order_release
                            : memory_order_relaxed;
}

/// Replaces *p with next(*p) atomically; returns the old value.
template <class T, class F> inline T update(T *p, F next, memory_order o) {
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  T value;
  do {
    value = next(old);
  } while (!__atomic_compare_exchange(p, &old, &value, false, rmw_order(o),
                                      __ATOMIC_RELAXED));
  return old;
}

} // namespace enigma_cpu_atomics

template <class T> inline T atomic_load_explicit(T *p, memory_order o) {
  T r;
  __atomic_load(p, &r, enigma_cpu_atomics::load_order(o));
  return r;
}
template <class T, class V>
inline void atomic_store_explicit(T *p, V value, memory_order o) {
  T v = T(value);
  __atomic_store(p, &v, enigma_cpu_atomics::store_order(o));
}
template <class T, class V>
inline T atomic_exchange_explicit(T *p, V value, memory_order o) {
  T v = T(value), r;
  __atomic_exchange(p, &v, &r, enigma_cpu_atomics::rmw_order(o));
  return r;
}
template <class T, class V>
inline bool atomic_compare_exchange_weak_explicit(T *p, T *expected,
                                                  V desired,
                                                  memory_order success,
                                                  memory_order failure) {
  T d = T(desired);
  memory_order o = enigma_cpu_atomics::combine(success, failure);
  return __atomic_compare_exchange(p, expected, &d, false,
                                   enigma_cpu_atomics::rmw_order(o),
                                   enigma_cpu_atomics::load_order(o));
}
template <class T, class V>
inline T atomic_fetch_add_explicit(T *p, V value, memory_order o) {
  T v = T(value);
  if constexpr (std::is_floating_point<T>::value)
    return enigma_cpu_atomics::update(p, [v](T x) { return T(x + v); }, o);
  else
    return __atomic_fetch_add(p, v, enigma_cpu_atomics::rmw_order(o));
}
template <class T, class V>
inline T atomic_fetch_sub_explicit(T *p, V value, memory_order o) {
  T v = T(value);
  if constexpr (std::is_floating_point<T>::value)
    return enigma_cpu_atomics::update(p, [v](T x) { return T(x - v); }, o);
  else
    return __atomic_fetch_sub(p, v, enigma_cpu_atomics::rmw_order(o));
}
template <class T, class V>
inline T atomic_fetch_min_explicit(T *p, V value, memory_order o) {
  T v = T(value);
  return enigma_cpu_atomics::update(p, [v](T x) { return v < x ? v : x; }, o);
}
template <class T, class V>
inline T atomic_fetch_max_explicit(T *p, V value, memory_order o) {
  T v = T(value);
  return enigma_cpu_atomics::update(p, [v](T x) { return v > x ? v : x; }, o);
}
// Float min / max (Metal has none; Enigma's helpers): store the operand
// while it compares below (above) the element, so a NaN is never stored
// and a NaN already there stays.
template <class T, class V>
inline T enigma_atomic_fetch_min_explicit(T *p, V value, memory_order o) {
  return atomic_fetch_min_explicit(p, value, o);
}
template <class T, class V>
inline T enigma_atomic_fetch_max_explicit(T *p, V value, memory_order o) {
  return atomic_fetch_max_explicit(p, value, o);
}
template <class T, class V>
inline T atomic_fetch_and_explicit(T *p, V value, memory_order o) {
  return __atomic_fetch_and(p, T(value), enigma_cpu_atomics::rmw_order(o));
}
template <class T, class V>
inline T atomic_fetch_or_explicit(T *p, V value, memory_order o) {
  return __atomic_fetch_or(p, T(value), enigma_cpu_atomics::rmw_order(o));
}
template <class T, class V>
inline T atomic_fetch_xor_explicit(T *p, V value, memory_order o) {
  return __atomic_fetch_xor(p, T(value), enigma_cpu_atomics::rmw_order(o));
}

#endif // ENIGMA_CPU_ATOMICS_H
