//===- msl_host_atomic.h - Metal's atomics ----------------------*- C++ -*-===//
//
// atomic<T> for int, uint, bool, ulong and float, in device or threadgroup
// memory (Metal has no atomics in thread or constant memory: no overload
// takes them), with the *_explicit functions. Threads of one threadgroup
// share an OS thread; threadgroups run in parallel, so device atomics are
// real host atomics with the order asked for. Integer-only operations
// (and/or/xor/min/max) do not exist for atomic_float; float add/sub are a
// compare-exchange loop.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_ATOMIC_H
#define ENIGMA_MSL_HOST_ATOMIC_H

namespace metal {

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

template <class T> struct atomic {
  static_assert(std::is_same<T, int>::value || std::is_same<T, uint>::value ||
                    std::is_same<T, bool>::value ||
                    std::is_same<T, ulong>::value ||
                    std::is_same<T, float>::value,
                "Metal has atomics of int, uint, bool, ulong and float only");
  atomic() = default;
  atomic(const atomic &) = delete; // Metal atomics are not copied
  atomic &operator=(const atomic &) = delete;

  T enigma_value;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<ulong> atomic_ulong;
typedef atomic<float> atomic_float;

inline void atomic_thread_fence(mem_flags, memory_order,
                                thread_scope = thread_scope::thread_scope_device) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

namespace enigma_detail {
constexpr int host_order(memory_order order) {
  return order == memory_order_relaxed   ? __ATOMIC_RELAXED
         : order == memory_order_acquire ? __ATOMIC_ACQUIRE
         : order == memory_order_release ? __ATOMIC_RELEASE
         : order == memory_order_acq_rel ? __ATOMIC_ACQ_REL
                                         : __ATOMIC_SEQ_CST;
}
/// Orders a load may use (release becomes relaxed, acq_rel acquire).
constexpr int load_order(memory_order order) {
  return order == memory_order_release   ? __ATOMIC_RELAXED
         : order == memory_order_acq_rel ? __ATOMIC_ACQUIRE
                                         : host_order(order);
}
constexpr int store_order(memory_order order) {
  return order == memory_order_acquire || order == memory_order_acq_rel
             ? __ATOMIC_RELEASE
             : host_order(order);
}

/// The object's value as an ordinary pointer (every address space is
/// ordinary memory on the host).
template <class T, class A> inline T *cell(A *object) {
  return (T *)(&object->enigma_value);
}

template <class T>
constexpr bool atomic_integer_v =
    std::is_same<T, int>::value || std::is_same<T, uint>::value ||
    std::is_same<T, ulong>::value;

template <class T> inline T float_update(T *p, T operand, bool subtract,
                                         int order) {
  static_assert(std::is_same<T, float>::value, "");
  uint32_t *bits = (uint32_t *)p;
  uint32_t seen = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float old = __builtin_bit_cast(float, seen);
    float updated = subtract ? old - operand : old + operand;
    uint32_t want = __builtin_bit_cast(uint32_t, updated);
    if (__atomic_compare_exchange_n(bits, &seen, want, true, order,
                                    __ATOMIC_RELAXED))
      return old;
  }
}
} // namespace enigma_detail

// One set of functions per address space that holds atomics.
#define ENIGMA_MSL_ATOMIC_FUNCTIONS(space)                                     \
  template <class T>                                                           \
  inline void atomic_store_explicit(volatile space atomic<T> *object,          \
                                    enigma_detail::exactly<T> desired,         \
                                    memory_order order) {                      \
    T value = desired; /* the generic builtins also take float and bool */   \
    __atomic_store(enigma_detail::cell<T>(object), &value,                     \
                   enigma_detail::store_order(order));                         \
  }                                                                            \
  template <class T>                                                           \
  inline T atomic_load_explicit(const volatile space atomic<T> *object,        \
                                memory_order order) {                          \
    T value;                                                                   \
    __atomic_load(enigma_detail::cell<T>(object), &value,                      \
                  enigma_detail::load_order(order));                           \
    return value;                                                              \
  }                                                                            \
  template <class T>                                                           \
  inline T atomic_exchange_explicit(volatile space atomic<T> *object,          \
                                    enigma_detail::exactly<T> desired,         \
                                    memory_order order) {                      \
    T value = desired, old;                                                    \
    __atomic_exchange(enigma_detail::cell<T>(object), &value, &old,            \
                      enigma_detail::host_order(order));                       \
    return old;                                                                \
  }                                                                            \
  template <class T>                                                           \
  inline bool atomic_compare_exchange_weak_explicit(                           \
      volatile space atomic<T> *object, enigma_detail::exactly<T> *expected,   \
      enigma_detail::exactly<T> desired, memory_order success,                 \
      memory_order failure) {                                                  \
    /* Never fails spuriously: a weak exchange may, but need not. */          \
    T value = desired;                                                         \
    return __atomic_compare_exchange(                                          \
        enigma_detail::cell<T>(object), (T *)expected, &value, false,          \
        enigma_detail::host_order(success),                                    \
        enigma_detail::load_order(failure));                                   \
  }                                                                            \
  template <class T, std::enable_if_t<!std::is_same<T, bool>::value, int> = 0> \
  inline T atomic_fetch_add_explicit(volatile space atomic<T> *object,         \
                                     enigma_detail::exactly<T> operand,        \
                                     memory_order order) {                     \
    if constexpr (std::is_same<T, float>::value)                               \
      return enigma_detail::float_update(enigma_detail::cell<T>(object), operand, \
                                         false,                                \
                                         enigma_detail::host_order(order));    \
    else                                                                       \
      return __atomic_fetch_add(enigma_detail::cell<T>(object), operand,          \
                                enigma_detail::host_order(order));             \
  }                                                                            \
  template <class T, std::enable_if_t<!std::is_same<T, bool>::value, int> = 0> \
  inline T atomic_fetch_sub_explicit(volatile space atomic<T> *object,         \
                                     enigma_detail::exactly<T> operand,        \
                                     memory_order order) {                     \
    if constexpr (std::is_same<T, float>::value)                               \
      return enigma_detail::float_update(enigma_detail::cell<T>(object), operand, \
                                         true,                                 \
                                         enigma_detail::host_order(order));    \
    else                                                                       \
      return __atomic_fetch_sub(enigma_detail::cell<T>(object), operand,          \
                                enigma_detail::host_order(order));             \
  }                                                                            \
  ENIGMA_MSL_INTEGER_ATOMIC(space, and)                                        \
  ENIGMA_MSL_INTEGER_ATOMIC(space, or)                                         \
  ENIGMA_MSL_INTEGER_ATOMIC(space, xor)                                        \
  ENIGMA_MSL_INTEGER_ATOMIC(space, min)                                        \
  ENIGMA_MSL_INTEGER_ATOMIC(space, max)

#define ENIGMA_MSL_INTEGER_ATOMIC(space, op)                                   \
  template <class T,                                                           \
            std::enable_if_t<enigma_detail::atomic_integer_v<T>, int> = 0>     \
  inline T atomic_fetch_##op##_explicit(volatile space atomic<T> *object,      \
                                        enigma_detail::exactly<T> operand,     \
                                        memory_order order) {                  \
    return __atomic_fetch_##op(enigma_detail::cell<T>(object), operand,         \
                               enigma_detail::host_order(order));              \
  }

ENIGMA_MSL_ATOMIC_FUNCTIONS(ENIGMA_MSL_DEVICE)
ENIGMA_MSL_ATOMIC_FUNCTIONS(ENIGMA_MSL_THREADGROUP)
#undef ENIGMA_MSL_ATOMIC_FUNCTIONS
#undef ENIGMA_MSL_INTEGER_ATOMIC

/// Metal 3.1's 64-bit atomics: min and max of ulong device memory, which
/// return nothing.
inline void atomic_min_explicit(volatile ENIGMA_MSL_DEVICE atomic<ulong> *object,
                                ulong operand, memory_order order) {
  __atomic_fetch_min(enigma_detail::cell<ulong>(object), operand,
                     enigma_detail::host_order(order));
}
inline void atomic_max_explicit(volatile ENIGMA_MSL_DEVICE atomic<ulong> *object,
                                ulong operand, memory_order order) {
  __atomic_fetch_max(enigma_detail::cell<ulong>(object), operand,
                     enigma_detail::host_order(order));
}

} // namespace metal

#endif
