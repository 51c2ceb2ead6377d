//===- metal_platform.h - What the semantics library needs ------*- C++ -*-===//
//
// The one header of the semantics library (metal_semantics.h) that knows
// which compiler builds it, so that every other header is written once for
// the host (GCC, Clang) and for CUDA (NVRTC, nvcc):
//   - METAL_FUNC qualifies every function: `__host__ __device__ inline`
//     under CUDA, `inline` elsewhere;
//   - the few type traits the library needs (NVRTC has no standard library,
//     and on the host no standard header may add names such as ::abs);
//   - primitives spelled differently per compiler: copying bits, counting
//     bits, the 64-bit high product, and the opaque 32-bit value CUDA needs
//     before narrowing a 16-bit integer.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_PLATFORM_H
#define ENIGMA_METAL_PLATFORM_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define METAL_CUDA 1
#define METAL_FUNC __host__ __device__ inline
#else
#define METAL_CUDA 0
#define METAL_FUNC inline
#endif

// Code compiled for the GPU itself (NVRTC, or nvcc's device pass).
#if defined(__CUDA_ARCH__)
#define METAL_DEVICE_CODE 1
#else
#define METAL_DEVICE_CODE 0
#endif

namespace metal {
namespace detail {

//===--- Type traits ------------------------------------------------------===//
//
// Trait values are enumerators, never constexpr variables: NVRTC emits every
// such variable it instantiates into the module, even one read only at
// compile time.

template <bool B, class T = int> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = int>
using enable_if_t = typename enable_if<B, T>::type;

template <bool C, class A, class B> struct conditional { typedef A type; };
template <class A, class B> struct conditional<false, A, B> { typedef B type; };
template <bool C, class A, class B>
using conditional_t = typename conditional<C, A, B>::type;

template <class A, class B> struct is_same { enum : bool { value = false }; };
template <class A> struct is_same<A, A> { enum : bool { value = true }; };

template <class T> T &&declval() noexcept; // only inside decltype

// Each integer type (bool is not one): whether Metal computes with it as a
// signed number, its width, the same-width unsigned type, and the type
// Metal means by it (`char` is Metal's signed char on every host; C++'s
// char is unsigned on aarch64).
template <class T> struct int_traits { enum : bool { is_int = false }; };
#define METAL_INT_TRAITS(T, U, M, S)                                           \
  template <> struct int_traits<T> {                                           \
    enum : bool { is_int = true, is_signed = S };                              \
    enum : int { bits = int(8 * sizeof(T)) };                                  \
    typedef U unsigned_type;                                                   \
    typedef M metal_type;                                                      \
  };
METAL_INT_TRAITS(char, unsigned char, signed char, true)
METAL_INT_TRAITS(signed char, unsigned char, signed char, true)
METAL_INT_TRAITS(unsigned char, unsigned char, unsigned char, false)
METAL_INT_TRAITS(short, unsigned short, short, true)
METAL_INT_TRAITS(unsigned short, unsigned short, unsigned short, false)
METAL_INT_TRAITS(int, unsigned int, int, true)
METAL_INT_TRAITS(unsigned int, unsigned int, unsigned int, false)
METAL_INT_TRAITS(long, unsigned long, long, true)
METAL_INT_TRAITS(unsigned long, unsigned long, unsigned long, false)
METAL_INT_TRAITS(long long, unsigned long long, long long, true)
METAL_INT_TRAITS(unsigned long long, unsigned long long, unsigned long long,
                 false)
#undef METAL_INT_TRAITS

template <class T> struct is_metal_integer {
  enum : bool { value = int_traits<T>::is_int };
};
template <class T> struct is_integral {
  enum : bool { value = int_traits<T>::is_int || is_same<T, bool>::value };
};
template <class T> struct is_floating_point {
  enum : bool {
    value = is_same<T, float>::value || is_same<T, double>::value ||
            is_same<T, long double>::value
  };
};
template <class T> struct is_arithmetic {
  enum : bool { value = is_integral<T>::value || is_floating_point<T>::value };
};

template <class T> using unsigned_t = typename int_traits<T>::unsigned_type;
template <class T> using metal_int_t = typename int_traits<T>::metal_type;
template <class T> struct is_signed_int {
  enum : bool { value = int_traits<T>::is_signed };
};

// The largest and smallest value of an integer type, as Metal reads it.
template <class T> METAL_FUNC constexpr metal_int_t<T> max_of() {
  typedef unsigned_t<T> U;
  return metal_int_t<T>(is_signed_int<T>::value ? U(U(~U(0)) >> 1) : U(~U(0)));
}
template <class T> METAL_FUNC constexpr metal_int_t<T> min_of() {
  return is_signed_int<T>::value ? metal_int_t<T>(-max_of<T>() - 1)
                            : metal_int_t<T>(0);
}

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
static_assert(sizeof(u16) == 2 && sizeof(u32) == 4 && sizeof(u64) == 8,
              "fixed-width integers");

//===--- Primitives -------------------------------------------------------===//

// The bytes of x read as To (same size).
template <class To, class From> METAL_FUNC To bit_cast(const From &x) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To out;
#if METAL_DEVICE_CODE
  memcpy(&out, &x, sizeof out); // a builtin of CUDA device code
#else
  __builtin_memcpy(&out, &x, sizeof out);
#endif
  return out;
}

METAL_FUNC u32 float_bits(float f) { return bit_cast<u32>(f); }
METAL_FUNC float float_from_bits(u32 bits) { return bit_cast<float>(bits); }

// Leading zeros, the width for 0 (CUDA's instructions give that; GCC and
// Clang leave their builtins undefined at 0 but drop the test where the
// instruction, e.g. lzcnt, defines it).
METAL_FUNC int clz32(u32 x) {
#if METAL_DEVICE_CODE
  return __clz(int(x));
#else
  return x == 0 ? 32 : __builtin_clz(x);
#endif
}
METAL_FUNC int clz64(u64 x) {
#if METAL_DEVICE_CODE
  return __clzll((long long)x);
#else
  return x == 0 ? 64 : __builtin_clzll(x);
#endif
}

// Trailing zeros of a non-zero value.
METAL_FUNC int ctz32(u32 x) {
#if METAL_DEVICE_CODE
  return __ffs(int(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}
METAL_FUNC int ctz64(u64 x) {
#if METAL_DEVICE_CODE
  return __ffsll((long long)x) - 1;
#else
  return __builtin_ctzll(x);
#endif
}
METAL_FUNC int popcount32(u32 x) {
#if METAL_DEVICE_CODE
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}
METAL_FUNC int popcount64(u64 x) {
#if METAL_DEVICE_CODE
  return __popcll(x);
#else
  return __builtin_popcountll(x);
#endif
}
METAL_FUNC u32 reverse_bits32(u32 x) {
#if METAL_DEVICE_CODE
  return __brev(x);
#else
  // Swap halves, then bytes, nibbles, pairs and single bits.
  x = (x >> 16) | (x << 16);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  return ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
#endif
}
METAL_FUNC u64 reverse_bits64(u64 x) {
#if METAL_DEVICE_CODE
  return __brevll(x);
#else
  return (u64(reverse_bits32(u32(x))) << 32) | reverse_bits32(u32(x >> 32));
#endif
}

// High 64 bits of the 128-bit product.
METAL_FUNC long long mul_hi64(long long x, long long y) {
#if METAL_DEVICE_CODE
  return __mul64hi(x, y);
#else
  return (long long)((__int128)x * y >> 64);
#endif
}
METAL_FUNC u64 mul_hi64(u64 x, u64 y) {
#if METAL_DEVICE_CODE
  return __umul64hi(x, y);
#else
  return u64((unsigned __int128)x * y >> 64);
#endif
}

// A 32-bit value the compiler cannot see through. On CUDA a 16-bit
// result is narrowed from it: NVRTC otherwise turns a 16-bit negation into
// neg.s16, whose result sign-extends wrongly for -32768 on sm_90
// (docs/design/integer-emission.md). The identity elsewhere.
METAL_FUNC u32 opaque_u32(u32 x) {
#if METAL_DEVICE_CODE
  u32 r;
  asm("mov.b32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
#else
  return x;
#endif
}

} // namespace detail
} // namespace metal

#endif // ENIGMA_METAL_PLATFORM_H
