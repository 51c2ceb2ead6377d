//===- msl_host_threads.h - The running thread, barriers --------*- C++ -*-===//
//
// Every thread of a threadgroup is a fiber of the runtime; `current` is the
// one running on this OS thread (fibers of one group share an OS thread, so
// a thread_local is right; it is set again after every suspension because
// other fibers ran in between). Barriers and simdgroup functions suspend the
// caller through the group's function pointers (enigma_msl_abi.h).
//
// A simdgroup function is identified by where it is called: lanes that call
// the same function at the same place (the return address of `arrive`,
// which is never inlined, inside the always-inlined Metal function) take
// part together, as the active lanes of a SIMD unit do; lanes elsewhere
// (another branch, returned) do not.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_THREADS_H
#define ENIGMA_MSL_HOST_THREADS_H

#define ENIGMA_MSL_INLINE inline __attribute__((always_inline))

namespace metal {

enum class mem_flags : uint {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(uint(a) | uint(b));
}
constexpr mem_flags operator&(mem_flags a, mem_flags b) {
  return mem_flags(uint(a) & uint(b));
}

enum class thread_scope {
  thread_scope_thread,
  thread_scope_simdgroup,
  thread_scope_threadgroup,
  thread_scope_device,
};

namespace enigma_detail {

template <class T> struct same { using type = T; };
/// A parameter of this type takes T without deducing it.
template <class T> using exactly = typename same<T>::type;

inline thread_local EnigmaMslThread *current = nullptr;

/// Suspends the calling lane until `resolve` has computed the function for
/// the lanes that called it at the same place.
__attribute__((noinline)) inline void arrive(EnigmaMslThread *me,
                                             EnigmaMslResolveFn resolve) {
  me->site = __builtin_return_address(0);
  me->resolve = resolve;
  me->group->collective(me);
  current = me;
}

template <class T> ENIGMA_MSL_INLINE void put(unsigned char *slot, const T &v) {
  static_assert(sizeof(T) <= ENIGMA_MSL_SLOT_BYTES, "operand too large");
  __builtin_memcpy(slot, &v, sizeof(T));
}
template <class T> ENIGMA_MSL_INLINE T take(const unsigned char *slot) {
  T v;
  __builtin_memcpy(&v, slot, sizeof(T));
  return v;
}

/// Runs a simdgroup function: `operand` and `value` in, the result out.
template <class R, class T>
ENIGMA_MSL_INLINE R collective(EnigmaMslResolveFn resolve, const T &value,
                               uint32_t operand = 0) {
  EnigmaMslThread *me = current;
  put(me->in, value);
  me->operand = operand;
  arrive(me, resolve);
  return take<R>(me->out);
}

inline void resolve_nothing(EnigmaMslThread *const *, uint32_t) {}

/// A thread-position attribute's value as the kernel declared it (uint,
/// uint2, uint3 or the ushort forms).
template <class T>
ENIGMA_MSL_INLINE T position(uint32_t x, uint32_t y, uint32_t z) {
  if constexpr (::metal::detail::is_vec<T>::value) {
    using E = typename T::value_type;
    T v;
    const uint32_t xyz[3] = {x, y, z};
    for (int i = 0; i < int(sizeof(T) / sizeof(E)) && i < 3; ++i)
      v[i] = E(xyz[i]);
    return v;
  } else {
    (void)y;
    (void)z;
    return T(x);
  }
}

/// A function constant's value from the bits the runtime was given.
template <class T> inline T function_constant(unsigned long long bits) {
  if constexpr (std::is_same<T, bool>::value) {
    return bits != 0;
  } else {
    using Bits = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t,
                                              uint64_t>>>;
    return __builtin_bit_cast(T, Bits(bits));
  }
}

} // namespace enigma_detail

//===--- barriers and fences -------------------------------------------------===//

/// Waits for every thread of the threadgroup that has not returned. The
/// threads share one OS thread, so every memory kind is coherent at once.
ENIGMA_MSL_INLINE void threadgroup_barrier(mem_flags) {
  EnigmaMslThread *me = enigma_detail::current;
  me->group->barrier(me);
  enigma_detail::current = me;
}

/// Waits for the lanes of the simdgroup taking part here.
ENIGMA_MSL_INLINE void simdgroup_barrier(mem_flags) {
  EnigmaMslThread *me = enigma_detail::current;
  enigma_detail::arrive(me, &enigma_detail::resolve_nothing);
}

} // namespace metal

#endif
