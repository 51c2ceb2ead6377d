/*===- enigma_cuda_prelude.cuh - Metal's builtins for CUDA kernels --------===*
 *
 * Included by every CUDA kernel Enigma generates and compiled by NVRTC, so
 * the emitter can print Metal's names (uint, half, clamp, simd_sum,
 * threadgroup_barrier, atomic_fetch_add_explicit, ...) for CUDA too. Metal's
 * semantics are the reference. Kept lean: it is parsed for every kernel.
 *
 * The backend defines:
 *   ENIGMA_USE_HALF / ENIGMA_USE_BFLOAT  when the kernel mentions half /
 *       bfloat; only then are the large cuda_fp16.h / cuda_bf16.h parsed.
 *   ENIGMA_FC_<index>  the value of function constant <index>, a literal of
 *       the constant's type; kernels read it with ENIGMA_FUNCTION_CONSTANT.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_PRELUDE_CUH
#define ENIGMA_CUDA_PRELUDE_CUH

#include "enigma_cuda_abi.h"

// Threads of this block along one dimension: the edge block of a dispatch
// is partial (Metal's dispatchThreads), e.g. its threads_per_threadgroup.
__device__ __forceinline__ unsigned int enigma_group_size(unsigned int block,
                                                          unsigned int dim,
                                                          unsigned int grid) {
  unsigned int rest = grid - block * dim;
  return rest < dim ? rest : dim;
}

#if (__CUDACC_VER_MAJOR__ < 12) ||                                             \
    (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ < 8)
#error "Enigma's CUDA kernels need NVRTC 12.8 or newer (__nv_atomic builtins)"
#endif

/*===--- Scalar types ------------------------------------------------------===*/

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong; /* 64-bit, as Metal's ulong (LP64 hosts) */

#if ENIGMA_USE_HALF
#include <cuda_fp16.h>
typedef __half half;
#endif
#if ENIGMA_USE_BFLOAT
#include <cuda_bf16.h>
typedef __nv_bfloat16 bfloat;
#endif

#define ENIGMA_FUNCTION_CONSTANT(index) (ENIGMA_FC_##index)

/*===--- Float math with Metal's names --------------------------------------===*
 * CUDA already provides sqrt rsqrt abs ceil floor round (half away from zero,
 * as Metal) trunc exp exp2 log log2 log10 sin cos tan asin acos atan sinh
 * cosh tanh fmin fmax pow fmod atan2 copysign fma min max isnan isinf
 * isfinite signbit for float with the same meaning; these are the rest. */

/* +-1, or x itself for +-0, and 0 for NaN (Metal's definition). */
__device__ inline float sign(float x) {
  return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : (x == x ? x : 0.0f);
}
__device__ inline float saturate(float x) { return fminf(fmaxf(x, 0.0f), 1.0f); }
/* x - floor(x), never reaching 1.0 (Metal's definition), rounded to T
 * before the clamp so half/bfloat cannot round up to 1.0; NaN stays NaN and
 * +-inf, +-0 give +-0 (OpenCL's special values, which Metal follows). */
template <class T> __device__ inline T enigma_fract_as(float x, float below_one) {
  if (isnan(x))
    return T(x);
  if (isinf(x) || x == 0.0f)
    return T(copysignf(0.0f, x));
  return T(fminf(float(T(x - floorf(x))), below_one));
}
__device__ inline float fract(float x) {
  return enigma_fract_as<float>(x, 0x1.fffffep-1f);
}
__device__ inline float step(float edge, float x) { return x < edge ? 0.0f : 1.0f; }
__device__ inline float clamp(float x, float lo, float hi) {
  return fminf(fmaxf(x, lo), hi);
}
__device__ inline float mix(float x, float y, float t) { return x + (y - x) * t; }
__device__ inline float smoothstep(float e0, float e1, float x) {
  float t = clamp((x - e0) / (e1 - e0), 0.0f, 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
__device__ inline bool isnormal(float x) {
  return isfinite(x) && fabsf(x) >= 0x1p-126f;
}

/* Integer clamp (Metal's clamp is generic over scalar types). */
template <class T> __device__ inline T clamp(T x, T lo, T hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

/* half and bfloat: computed in float, then rounded once, which is what
 * Metal's half math promises at least. */
#define ENIGMA_VIA_FLOAT_1(T, f)                                               \
  __device__ inline T f(T x) { return T(f(float(x))); }
#define ENIGMA_VIA_FLOAT_2(T, f)                                               \
  __device__ inline T f(T x, T y) { return T(f(float(x), float(y))); }
#define ENIGMA_VIA_FLOAT_3(T, f)                                               \
  __device__ inline T f(T x, T y, T z) {                                       \
    return T(f(float(x), float(y), float(z)));                                 \
  }
#define ENIGMA_VIA_FLOAT_PRED(T, f)                                            \
  __device__ inline bool f(T x) { return f(float(x)); }
#define ENIGMA_LOW_PRECISION_MATH(T)                                           \
  ENIGMA_VIA_FLOAT_1(T, sqrt) ENIGMA_VIA_FLOAT_1(T, rsqrt)                     \
  ENIGMA_VIA_FLOAT_1(T, abs) ENIGMA_VIA_FLOAT_1(T, ceil)                       \
  ENIGMA_VIA_FLOAT_1(T, floor) ENIGMA_VIA_FLOAT_1(T, round)                    \
  ENIGMA_VIA_FLOAT_1(T, trunc) ENIGMA_VIA_FLOAT_1(T, sign)                     \
  ENIGMA_VIA_FLOAT_1(T, saturate)                                              \
  ENIGMA_VIA_FLOAT_1(T, exp) ENIGMA_VIA_FLOAT_1(T, exp2)                       \
  ENIGMA_VIA_FLOAT_1(T, log) ENIGMA_VIA_FLOAT_1(T, log2)                       \
  ENIGMA_VIA_FLOAT_1(T, log10) ENIGMA_VIA_FLOAT_1(T, sin)                      \
  ENIGMA_VIA_FLOAT_1(T, cos) ENIGMA_VIA_FLOAT_1(T, tan)                        \
  ENIGMA_VIA_FLOAT_1(T, asin) ENIGMA_VIA_FLOAT_1(T, acos)                      \
  ENIGMA_VIA_FLOAT_1(T, atan) ENIGMA_VIA_FLOAT_1(T, sinh)                      \
  ENIGMA_VIA_FLOAT_1(T, cosh) ENIGMA_VIA_FLOAT_1(T, tanh)                      \
  ENIGMA_VIA_FLOAT_2(T, fmin) ENIGMA_VIA_FLOAT_2(T, fmax)                      \
  ENIGMA_VIA_FLOAT_2(T, min) ENIGMA_VIA_FLOAT_2(T, max)                        \
  ENIGMA_VIA_FLOAT_2(T, pow) ENIGMA_VIA_FLOAT_2(T, fmod)                       \
  ENIGMA_VIA_FLOAT_2(T, atan2) ENIGMA_VIA_FLOAT_2(T, step)                     \
  ENIGMA_VIA_FLOAT_2(T, copysign) ENIGMA_VIA_FLOAT_3(T, clamp)                 \
  ENIGMA_VIA_FLOAT_3(T, fma) ENIGMA_VIA_FLOAT_3(T, mix)                        \
  ENIGMA_VIA_FLOAT_3(T, smoothstep) ENIGMA_VIA_FLOAT_PRED(T, isnan)            \
  ENIGMA_VIA_FLOAT_PRED(T, isinf) ENIGMA_VIA_FLOAT_PRED(T, isfinite)           \
  ENIGMA_VIA_FLOAT_PRED(T, signbit)

/* fract and isnormal depend on the type's own precision and exponent range
 * (1e-6 is a normal float but a subnormal half). */
#if ENIGMA_USE_HALF
ENIGMA_LOW_PRECISION_MATH(half)
__device__ inline half fract(half x) {
  return enigma_fract_as<half>(float(x), 0x1.ffcp-1f);
}
__device__ inline bool isnormal(half x) {
  unsigned exponent = (__half_as_ushort(x) >> 10) & 0x1fu;
  return exponent != 0 && exponent != 0x1fu;
}
#endif
#if ENIGMA_USE_BFLOAT
ENIGMA_LOW_PRECISION_MATH(bfloat)
__device__ inline bfloat fract(bfloat x) {
  return enigma_fract_as<bfloat>(float(x), 0x1.fep-1f);
}
__device__ inline bool isnormal(bfloat x) { return isnormal(float(x)); }
#endif
#undef ENIGMA_LOW_PRECISION_MATH
#undef ENIGMA_VIA_FLOAT_1
#undef ENIGMA_VIA_FLOAT_2
#undef ENIGMA_VIA_FLOAT_3
#undef ENIGMA_VIA_FLOAT_PRED

/*===--- Integer math (8..64-bit, signed and unsigned) ----------------------===*/

namespace enigma_detail {
/* The unsigned type of the same width, and the width in bits. */
template <class T> struct int_info;
#define ENIGMA_INT_INFO(T, U, S)                                               \
  template <> struct int_info<T> {                                             \
    typedef U unsigned_type;                                                   \
    static constexpr int bits = 8 * sizeof(T);                                 \
    static constexpr bool is_signed = S;                                       \
  };
ENIGMA_INT_INFO(signed char, unsigned char, true)
ENIGMA_INT_INFO(char, unsigned char, (char)-1 < 0)
ENIGMA_INT_INFO(unsigned char, unsigned char, false)
ENIGMA_INT_INFO(short, unsigned short, true)
ENIGMA_INT_INFO(unsigned short, unsigned short, false)
ENIGMA_INT_INFO(int, unsigned int, true)
ENIGMA_INT_INFO(unsigned int, unsigned int, false)
ENIGMA_INT_INFO(long, unsigned long, true)
ENIGMA_INT_INFO(unsigned long, unsigned long, false)
ENIGMA_INT_INFO(long long, unsigned long long, true)
ENIGMA_INT_INFO(unsigned long long, unsigned long long, false)
#undef ENIGMA_INT_INFO

template <class T> __device__ inline T max_of() {
  typedef typename int_info<T>::unsigned_type U;
  return int_info<T>::is_signed ? T(U(~U(0)) >> 1) : T(~U(0));
}
template <class T> __device__ inline T min_of() {
  return int_info<T>::is_signed ? T(-max_of<T>() - 1) : T(0);
}
/* Saturates a value computed exactly in 128 bits to T's range. */
template <class T> __device__ inline T saturate_wide(__int128 v) {
  return v > (__int128)max_of<T>()   ? max_of<T>()
         : v < (__int128)min_of<T>() ? min_of<T>()
                                     : T(v);
}
} // namespace enigma_detail

/* abs for the narrow types CUDA lacks; unsigned abs is the identity. */
__device__ inline signed char abs(signed char x) { return x < 0 ? -x : x; }
__device__ inline short abs(short x) { return x < 0 ? -x : x; }
__device__ inline uchar abs(uchar x) { return x; }
__device__ inline ushort abs(ushort x) { return x; }
__device__ inline uint abs(uint x) { return x; }
__device__ inline ulong abs(ulong x) { return x; }
__device__ inline unsigned long long abs(unsigned long long x) { return x; }

/* |x - y| without overflow; the bits of the unsigned difference. */
template <class T> __device__ inline T absdiff(T x, T y) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  return x > y ? T(U(U(x) - U(y))) : T(U(U(y) - U(x)));
}
template <class T> __device__ inline T addsat(T x, T y) {
  if constexpr (enigma_detail::int_info<T>::is_signed)
    return enigma_detail::saturate_wide<T>((__int128)x + (__int128)y);
  else {
    T sum = T(x + y);
    return sum < x ? enigma_detail::max_of<T>() : sum;
  }
}
template <class T> __device__ inline T subsat(T x, T y) {
  if constexpr (enigma_detail::int_info<T>::is_signed)
    return enigma_detail::saturate_wide<T>((__int128)x - (__int128)y);
  else
    return x < y ? T(0) : T(x - y);
}
/* The high half of the double-width product. */
template <class T> __device__ inline T mulhi(T x, T y) {
  constexpr int bits = enigma_detail::int_info<T>::bits;
  if constexpr (enigma_detail::int_info<T>::is_signed)
    return T(((__int128)x * (__int128)y) >> bits);
  else
    return T(((unsigned __int128)x * (unsigned __int128)y) >> bits);
}
/* x * y + z, saturated (64-bit signed/unsigned products fit in 128 bits). */
template <class T> __device__ inline T madsat(T x, T y, T z) {
  if constexpr (enigma_detail::int_info<T>::is_signed)
    return enigma_detail::saturate_wide<T>((__int128)x * y + z);
  else {
    unsigned __int128 v = (unsigned __int128)x * y + z;
    return v > (unsigned __int128)enigma_detail::max_of<T>()
               ? enigma_detail::max_of<T>()
               : T(v);
  }
}
/* Rotate left by n modulo the width (Metal's rotate). */
template <class T, class N> __device__ inline T rotate(T x, N n) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  constexpr int bits = enigma_detail::int_info<T>::bits;
  unsigned s = unsigned(n) % bits;
  U u = U(x);
  return s == 0 ? x : T(U(U(u << s) | U(u >> (bits - s))));
}
template <class T> __device__ inline T clz(T x) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  constexpr int bits = enigma_detail::int_info<T>::bits;
  if constexpr (bits == 64)
    return T(__clzll((long long)U(x)));
  else
    return T(__clz(int(unsigned(U(x)))) - (32 - bits));
}
template <class T> __device__ inline T ctz(T x) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  constexpr int bits = enigma_detail::int_info<T>::bits;
  if (U(x) == 0)
    return T(bits);
  if constexpr (bits == 64)
    return T(__ffsll((long long)U(x)) - 1);
  else
    return T(__ffs(int(unsigned(U(x)))) - 1);
}
template <class T> __device__ inline T popcount(T x) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  if constexpr (enigma_detail::int_info<T>::bits == 64)
    return T(__popcll((unsigned long long)U(x)));
  else
    return T(__popc(unsigned(U(x))));
}
template <class T> __device__ inline T reverse_bits(T x) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  constexpr int bits = enigma_detail::int_info<T>::bits;
  if constexpr (bits == 64)
    return T(__brevll((unsigned long long)U(x)));
  else
    return T(U(__brev(unsigned(U(x))) >> (32 - bits)));
}
/* `count` bits from `offset`, sign-extended for signed T (Metal). */
template <class T> __device__ inline T extract_bits(T x, uint offset, uint count) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  if (count == 0)
    return T(0);
  unsigned long long field = (unsigned long long)U(x) >> offset;
  unsigned drop = 64u - count;
  if constexpr (enigma_detail::int_info<T>::is_signed)
    return T((long long)(field << drop) >> drop);
  else
    return T((field << drop) >> drop);
}
template <class T>
__device__ inline T insert_bits(T base, T insert, uint offset, uint count) {
  typedef typename enigma_detail::int_info<T>::unsigned_type U;
  if (count == 0)
    return base;
  unsigned long long mask = (~0ull >> (64u - count)) << offset;
  unsigned long long merged = ((unsigned long long)U(base) & ~mask) |
                              (((unsigned long long)U(insert) << offset) & mask);
  return T(U(merged));
}

/*===--- Thread positions Metal has and CUDA spells differently -------------===*/

__device__ inline uint enigma_thread_index_in_threadgroup() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
/* A simdgroup is a warp: 32 consecutive linear thread indices. */
__device__ inline uint enigma_thread_index_in_simdgroup() {
  return enigma_thread_index_in_threadgroup() & 31u;
}
__device__ inline uint enigma_simdgroup_index_in_threadgroup() {
  return enigma_thread_index_in_threadgroup() >> 5;
}
__device__ inline uint enigma_simdgroups_per_threadgroup() {
  return (blockDim.x * blockDim.y * blockDim.z + 31u) >> 5;
}
__device__ inline uint enigma_threads_per_simdgroup() { return 32u; }

/*===--- Barriers ------------------------------------------------------------===*/

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
};
__device__ inline mem_flags operator|(mem_flags a, mem_flags b) {
  return mem_flags(unsigned(a) | unsigned(b));
}
__device__ inline bool enigma_has_flag(mem_flags set, mem_flags flag) {
  return (unsigned(set) & unsigned(flag)) != 0;
}
/* __syncthreads already orders block-local and global accesses among the
 * block; the extra fence makes device writes visible beyond the block too,
 * which is the conservative reading of mem_device. */
__device__ inline void threadgroup_barrier(mem_flags flags) {
  if (enigma_has_flag(flags, mem_flags::mem_device))
    __threadfence();
  __syncthreads();
}
__device__ inline void simdgroup_barrier(mem_flags flags) {
  if (enigma_has_flag(flags, mem_flags::mem_device))
    __threadfence();
  else if (enigma_has_flag(flags, mem_flags::mem_threadgroup))
    __threadfence_block();
  __syncwarp(__activemask());
}

/* A 32-bit value the compiler cannot see through. The CUDA emitter passes
 * 16-bit integer sums, differences and products through it before
 * narrowing them: otherwise NVRTC turns a 16-bit negation into neg.s16,
 * whose result sign-extends wrongly for -32768 on sm_90 (+32768). */
__device__ __forceinline__ unsigned int enigma_opaque_u32(unsigned int x) {
  unsigned int r;
  asm("mov.b32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}

/* Metal's integer abs: the most negative value wraps to itself. CUDA's
 * abs(int) leaves that undefined, and the compiler then takes the result
 * as non-negative (a later u32 -> float conversion became a signed one),
 * so generated code calls enigma_abs, which never overflows. */
template <class T> __device__ inline T enigma_abs(T x) { return abs(x); }
__device__ inline signed char enigma_abs(signed char x) {
  return (signed char)(x < 0 ? 0u - (unsigned)x : (unsigned)x);
}
__device__ inline short enigma_abs(short x) {
  return (short)enigma_opaque_u32(x < 0 ? 0u - (unsigned)x : (unsigned)x);
}
/* For int, ptxas takes the result of abs.s32 (which NVRTC forms from any
 * spelling of abs, even in 64 bits) as non-negative, through mov and
 * funnel shifts too, and converted |INT_MIN| from u32 to float as signed
 * (-2^31): an H200 probe of eleven forms found the select written in PTX
 * right. */
__device__ inline int enigma_abs(int x) {
  unsigned r;
  asm("{.reg .pred p; .reg .b32 t; setp.lt.s32 p, %1, 0; sub.u32 t, 0, %1; "
      "selp.b32 %0, t, %1, p;}"
      : "=r"(r)
      : "r"(x));
  return (int)r;
}
__device__ inline long enigma_abs(long x) {
  return (long)(x < 0 ? 0ul - (unsigned long)x : (unsigned long)x);
}
__device__ inline long long enigma_abs(long long x) {
  return (long long)(x < 0 ? 0ull - (unsigned long long)x
                           : (unsigned long long)x);
}

/*===--- SIMD-group (warp) and quad-group functions ----------------------------===*
 * Metal's functions act on the lanes that exist: a simdgroup of the edge
 * threadgroup may be partial. With the whole warp there (the common case)
 * they use shuffles in log steps; otherwise every lane folds the existing
 * lanes in lane order, which is slower but exact.
 *
 * Which lanes exist is computed from the launch (enigma_existing_lanes, at
 * kernel entry) and passed to every call as the trailing EnigmaLanes: under
 * independent thread scheduling __activemask() only gives the lanes that
 * happen to execute together, which can be fewer. Calls without it (hand-
 * written code) fall back to __activemask(). */

struct EnigmaLanes {
  unsigned int mask;
};

/* The lanes of the calling thread's warp that lie inside the dispatch. */
__device__ inline EnigmaLanes enigma_existing_lanes(const EnigmaCudaLaunch &launch) {
  unsigned int total = blockDim.x * blockDim.y * blockDim.z;
  unsigned int base = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & ~31u;
  unsigned int launched = total - base >= 32u ? 0xffffffffu : (1u << (total - base)) - 1u;
  bool whole = (unsigned long long)(blockIdx.x + 1) * blockDim.x <= launch.grid[0] &&
               (unsigned long long)(blockIdx.y + 1) * blockDim.y <= launch.grid[1] &&
               (unsigned long long)(blockIdx.z + 1) * blockDim.z <= launch.grid[2];
  if (whole)
    return EnigmaLanes{launched};
  unsigned int mask = 0;
  for (unsigned int l = 0; l < 32u && base + l < total; ++l) {
    unsigned int t = base + l;
    unsigned int x = t % blockDim.x, y = (t / blockDim.x) % blockDim.y,
                 z = t / (blockDim.x * blockDim.y);
    if (blockIdx.x * blockDim.x + x < launch.grid[0] &&
        blockIdx.y * blockDim.y + y < launch.grid[1] &&
        blockIdx.z * blockDim.z + z < launch.grid[2])
      mask |= 1u << l;
  }
  return EnigmaLanes{mask};
}
/* The same for a kernel launched with 1-D blocks (enigma_cuda_abi.h): the
 * threads that exist are the first `count` of the block. */
__device__ inline EnigmaLanes enigma_linear_lanes(unsigned int linear,
                                                  unsigned int count) {
  unsigned int base = linear & ~31u;
  return EnigmaLanes{count - base >= 32u ? 0xffffffffu
                                         : (1u << (count - base)) - 1u};
}
__device__ inline EnigmaLanes enigma_active_lanes() {
  return EnigmaLanes{__activemask()};
}

namespace enigma_detail {
__device__ inline uint lane() { return enigma_thread_index_in_simdgroup(); }

/* One shuffle primitive for every Metal scalar type; narrow types travel as
 * int since __shfl_sync has no 8/16-bit integer overloads. */
template <class T> __device__ inline T read_lane(uint mask, T v, uint src) {
  return __shfl_sync(mask, v, int(src));
}
#define ENIGMA_READ_LANE_VIA_INT(T)                                            \
  __device__ inline T read_lane(uint mask, T v, uint src) {                    \
    return (T)__shfl_sync(mask, (int)v, int(src));                             \
  }
ENIGMA_READ_LANE_VIA_INT(bool)
ENIGMA_READ_LANE_VIA_INT(char)
ENIGMA_READ_LANE_VIA_INT(signed char)
ENIGMA_READ_LANE_VIA_INT(unsigned char)
ENIGMA_READ_LANE_VIA_INT(short)
ENIGMA_READ_LANE_VIA_INT(unsigned short)
#undef ENIGMA_READ_LANE_VIA_INT

struct op_add { template <class T> __device__ T operator()(T a, T b) const { return a + b; } };
struct op_mul { template <class T> __device__ T operator()(T a, T b) const { return a * b; } };
struct op_min { template <class T> __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
struct op_max { template <class T> __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
struct op_and { template <class T> __device__ T operator()(T a, T b) const { return a & b; } };
struct op_or  { template <class T> __device__ T operator()(T a, T b) const { return a | b; } };
struct op_xor { template <class T> __device__ T operator()(T a, T b) const { return a ^ b; } };

/* Reduction over the existing lanes (`mask`) of a group of `width` lanes
 * (32 or 4). __shfl_sync needs every lane of its mask to run the same
 * shuffles, so the choice of path depends only on the warp-wide mask: a
 * full warp uses log steps; a partial one reads every lane of the group in
 * order (the same shuffles on every lane) and folds the existing ones.
 * The fold stays a loop (unroll 1): unrolled 32 times in every reduction
 * of a kernel, it made ptxas fail register allocation (C7600). */
template <uint width, class T, class Op>
__device__ inline T group_reduce(T v, Op op, uint mask) {
  uint me = lane();
  if (mask == 0xffffffffu) {
    for (uint offset = width / 2; offset > 0; offset >>= 1)
      v = op(v, read_lane(mask, v, me ^ offset));
    return v;
  }
  uint base = me & ~(width - 1);
  T acc = v;
  bool first = true;
#pragma unroll 1
  for (uint j = 0; j < width; ++j) {
    T x = read_lane(mask, v, base + j);
    if ((mask >> (base + j)) & 1u) {
      acc = first ? x : op(acc, x);
      first = false;
    }
  }
  return acc;
}

/* Inclusive scan over the existing lanes; exclusive shifts it by one
 * existing lane, the first getting `identity`. Same paths as group_reduce. */
template <uint width, class T, class Op>
__device__ inline T group_scan(T v, Op op, bool inclusive, T identity,
                               uint mask) {
  uint me = lane();
  uint base = me & ~(width - 1);
  uint local = me - base;
  if (mask == 0xffffffffu) {
    for (uint offset = 1; offset < width; offset <<= 1) {
      T y = read_lane(mask, v, local >= offset ? me - offset : me);
      if (local >= offset)
        v = op(y, v);
    }
    if (inclusive)
      return v;
    T previous = read_lane(mask, v, local > 0 ? me - 1 : me);
    return local > 0 ? previous : identity;
  }
  T acc = identity;
#pragma unroll 1
  for (uint j = 0; j < width; ++j) {
    T x = read_lane(mask, v, base + j);
    if (((mask >> (base + j)) & 1u) && (j < local || (inclusive && j == local)))
      acc = op(acc, x);
  }
  return acc;
}

/* Reads lane `src`; a lane that is not active (does not exist in a partial
 * threadgroup) would give an undefined value, so the caller keeps its own,
 * as the CPU backend does. */
template <uint width, class T>
__device__ inline T group_read(T v, uint src, uint mask) {
  T x = read_lane(mask, v, src);
  return (mask >> src) & 1u ? x : v;
}
} // namespace enigma_detail

#define ENIGMA_LANES_ARG EnigmaLanes lanes = enigma_active_lanes()
#define ENIGMA_REDUCE(prefix, width, name, op)                                 \
  template <class T> __device__ inline T prefix##_##name(T v, ENIGMA_LANES_ARG) { \
    return enigma_detail::group_reduce<width>(v, enigma_detail::op(),         \
                                              lanes.mask);                     \
  }
#define ENIGMA_SCAN(prefix, width, name, op, inclusive, identity)             \
  template <class T> __device__ inline T prefix##_##name(T v, ENIGMA_LANES_ARG) { \
    return enigma_detail::group_scan<width>(v, enigma_detail::op(), inclusive, \
                                            T(identity), lanes.mask);          \
  }
#define ENIGMA_GROUP_REDUCTION(prefix, width)                                  \
  ENIGMA_REDUCE(prefix, width, sum, op_add)                                    \
  ENIGMA_REDUCE(prefix, width, product, op_mul)                                \
  ENIGMA_REDUCE(prefix, width, min, op_min)                                    \
  ENIGMA_REDUCE(prefix, width, max, op_max)                                    \
  ENIGMA_REDUCE(prefix, width, and, op_and)                                    \
  ENIGMA_REDUCE(prefix, width, or, op_or)                                      \
  ENIGMA_REDUCE(prefix, width, xor, op_xor)                                    \
  ENIGMA_SCAN(prefix, width, prefix_inclusive_sum, op_add, true, 0)            \
  ENIGMA_SCAN(prefix, width, prefix_exclusive_sum, op_add, false, 0)           \
  ENIGMA_SCAN(prefix, width, prefix_inclusive_product, op_mul, true, 1)        \
  ENIGMA_SCAN(prefix, width, prefix_exclusive_product, op_mul, false, 1)
ENIGMA_GROUP_REDUCTION(simd, 32)
ENIGMA_GROUP_REDUCTION(quad, 4)
#undef ENIGMA_GROUP_REDUCTION
#undef ENIGMA_REDUCE
#undef ENIGMA_SCAN

/* Shuffles. Lanes whose source falls outside the group keep their own
 * value, as Metal's shuffle_up / shuffle_down specify; shuffle / broadcast
 * read lane `lane % width`, shuffle_xor `me ^ (mask % width)`; a source lane
 * that is not active leaves the caller's own value (docs/reference/simd.md). */
template <class T>
__device__ inline T simd_shuffle(T v, uint lane, ENIGMA_LANES_ARG) {
  return enigma_detail::group_read<32>(v, lane & 31u, lanes.mask);
}
template <class T>
__device__ inline T simd_broadcast(T v, uint lane, ENIGMA_LANES_ARG) {
  return enigma_detail::group_read<32>(v, lane & 31u, lanes.mask);
}
template <class T>
__device__ inline T simd_broadcast_first(T v, ENIGMA_LANES_ARG) {
  return enigma_detail::group_read<32>(v, uint(__ffs(lanes.mask) - 1),
                                       lanes.mask);
}
template <class T>
__device__ inline T simd_shuffle_xor(T v, uint mask, ENIGMA_LANES_ARG) {
  return enigma_detail::group_read<32>(v, enigma_detail::lane() ^ (mask & 31u),
                                       lanes.mask);
}
template <class T>
__device__ inline T simd_shuffle_up(T v, uint delta, ENIGMA_LANES_ARG) {
  uint me = enigma_detail::lane();
  return enigma_detail::group_read<32>(v, me >= delta ? me - delta : me,
                                       lanes.mask);
}
template <class T>
__device__ inline T simd_shuffle_down(T v, uint delta, ENIGMA_LANES_ARG) {
  uint me = enigma_detail::lane();
  return enigma_detail::group_read<32>(v, delta < 32u - me ? me + delta : me,
                                       lanes.mask);
}
template <class T>
__device__ inline T quad_shuffle(T v, uint lane, ENIGMA_LANES_ARG) {
  return enigma_detail::group_read<4>(
      v, (enigma_detail::lane() & ~3u) | (lane & 3u), lanes.mask);
}
template <class T>
__device__ inline T quad_broadcast(T v, uint lane, ENIGMA_LANES_ARG) {
  return quad_shuffle(v, lane, lanes);
}
template <class T>
__device__ inline T quad_shuffle_xor(T v, uint mask, ENIGMA_LANES_ARG) {
  return enigma_detail::group_read<4>(v, enigma_detail::lane() ^ (mask & 3u),
                                      lanes.mask);
}
template <class T>
__device__ inline T quad_shuffle_up(T v, uint delta, ENIGMA_LANES_ARG) {
  uint me = enigma_detail::lane();
  return enigma_detail::group_read<4>(v, (me & 3u) >= delta ? me - delta : me,
                                      lanes.mask);
}
template <class T>
__device__ inline T quad_shuffle_down(T v, uint delta, ENIGMA_LANES_ARG) {
  uint me = enigma_detail::lane();
  return enigma_detail::group_read<4>(
      v, delta < 4u - (me & 3u) ? me + delta : me, lanes.mask);
}
__device__ inline bool simd_any(bool p, ENIGMA_LANES_ARG) {
  return __any_sync(lanes.mask, p);
}
__device__ inline bool simd_all(bool p, ENIGMA_LANES_ARG) {
  return __all_sync(lanes.mask, p);
}
#undef ENIGMA_LANES_ARG

/*===--- Atomics with Metal's names and memory orders -------------------------===*
 * Buffers are plain pointers in CUDA, so atomic_int & co. are the plain
 * types and `(atomic_int *)&buf[i]` reads the same as Metal's cast. All
 * atomics use device scope, which is also correct for threadgroup memory. */

typedef int atomic_int;
typedef unsigned int atomic_uint;
typedef unsigned long atomic_ulong;
typedef float atomic_float;

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

/* The __nv_atomic builtins want the order as a literal, so each function
 * switches on it; after inlining a constant order leaves one case. */
#define ENIGMA_WITH_ORDER(order, DO)                                           \
  switch (order) {                                                             \
  case memory_order_relaxed: DO(__NV_ATOMIC_RELAXED);                          \
  case memory_order_acquire: DO(__NV_ATOMIC_ACQUIRE);                          \
  case memory_order_release: DO(__NV_ATOMIC_RELEASE);                          \
  case memory_order_acq_rel: DO(__NV_ATOMIC_ACQ_REL);                          \
  default: DO(__NV_ATOMIC_SEQ_CST);                                            \
  }
/* Loads cannot release and stores cannot acquire: drop the half that does
 * not apply, as C++ compilers do. */
#define ENIGMA_WITH_LOAD_ORDER(order, DO)                                      \
  switch (order) {                                                             \
  case memory_order_relaxed: case memory_order_release:                        \
    DO(__NV_ATOMIC_RELAXED);                                                   \
  case memory_order_acquire: case memory_order_acq_rel:                        \
    DO(__NV_ATOMIC_ACQUIRE);                                                   \
  default: DO(__NV_ATOMIC_SEQ_CST);                                            \
  }
#define ENIGMA_WITH_STORE_ORDER(order, DO)                                     \
  switch (order) {                                                             \
  case memory_order_relaxed: case memory_order_acquire:                        \
    DO(__NV_ATOMIC_RELAXED);                                                   \
  case memory_order_release: case memory_order_acq_rel:                        \
    DO(__NV_ATOMIC_RELEASE);                                                   \
  default: DO(__NV_ATOMIC_SEQ_CST);                                            \
  }

namespace enigma_detail {
/* The builtins take load/store/exchange/CAS on integers only and add/sub on
 * unsigned 64-bit only: move such values as same-width unsigned words. */
template <class T> struct atomic_word { typedef T type; };
template <> struct atomic_word<float> { typedef unsigned int type; };
template <> struct atomic_word<long> { typedef unsigned long long type; };
template <> struct atomic_word<long long> { typedef unsigned long long type; };
template <> struct atomic_word<unsigned long> { typedef unsigned long long type; };
template <class T> __device__ inline typename atomic_word<T>::type to_word(T v) {
  typename atomic_word<T>::type w;
  memcpy(&w, &v, sizeof v);
  return w;
}
template <class T, class W> __device__ inline T from_word(W w) {
  T v;
  memcpy(&v, &w, sizeof v);
  return v;
}
template <class T> __device__ inline typename atomic_word<T>::type *word_ptr(T *p) {
  return reinterpret_cast<typename atomic_word<T>::type *>(p);
}
} // namespace enigma_detail

#define ENIGMA_SCOPE __NV_THREAD_SCOPE_DEVICE

template <class T>
__device__ inline T atomic_load_explicit(T *p, memory_order order) {
#define ENIGMA_DO(o)                                                           \
  return enigma_detail::from_word<T>(                                          \
      __nv_atomic_load_n(enigma_detail::word_ptr(p), o, ENIGMA_SCOPE));
  ENIGMA_WITH_LOAD_ORDER(order, ENIGMA_DO)
#undef ENIGMA_DO
}
template <class T, class V>
__device__ inline void atomic_store_explicit(T *p, V value, memory_order order) {
  auto w = enigma_detail::to_word(T(value));
#define ENIGMA_DO(o)                                                           \
  __nv_atomic_store_n(enigma_detail::word_ptr(p), w, o, ENIGMA_SCOPE);         \
  return;
  ENIGMA_WITH_STORE_ORDER(order, ENIGMA_DO)
#undef ENIGMA_DO
}
template <class T, class V>
__device__ inline T atomic_exchange_explicit(T *p, V value, memory_order order) {
  auto w = enigma_detail::to_word(T(value));
#define ENIGMA_DO(o)                                                           \
  return enigma_detail::from_word<T>(                                          \
      __nv_atomic_exchange_n(enigma_detail::word_ptr(p), w, o, ENIGMA_SCOPE));
  ENIGMA_WITH_ORDER(order, ENIGMA_DO)
#undef ENIGMA_DO
}
/* Metal's weak compare-exchange: on failure *expected gets the current
 * value. The failure order is the load part of the stronger of the two. */
template <class T, class V>
__device__ inline bool atomic_compare_exchange_weak_explicit(
    T *p, T *expected, V desired, memory_order success, memory_order failure) {
  memory_order order = success > failure ? success : failure;
  auto want = enigma_detail::to_word(*expected);
  auto put = enigma_detail::to_word(T(desired));
  bool swapped = false;
#define ENIGMA_DO(o)                                                           \
  swapped = __nv_atomic_compare_exchange_n(enigma_detail::word_ptr(p), &want, \
                                           put, true, o, o, ENIGMA_SCOPE);     \
  break;
  switch (order) {
  case memory_order_relaxed: ENIGMA_DO(__NV_ATOMIC_RELAXED)
  case memory_order_acquire: ENIGMA_DO(__NV_ATOMIC_ACQUIRE)
  default: ENIGMA_DO(__NV_ATOMIC_SEQ_CST)
  }
#undef ENIGMA_DO
  *expected = enigma_detail::from_word<T>(want);
  return swapped;
}

/* Read-modify-write: floats go to the builtin as they are, signed 64-bit
 * add/sub as unsigned words (two's complement gives the same bits). */
#define ENIGMA_ATOMIC_RMW(name, arith)                                \
  template <class T, class V>                                                  \
  __device__ inline T name(T *p, V value, memory_order order) {                \
    T v = T(value);                                                            \
    if constexpr (arith && sizeof(T) == 8) {                                   \
      unsigned long long *w = reinterpret_cast<unsigned long long *>(p);       \
      unsigned long long x = (unsigned long long)v;                            \
      ENIGMA_WITH_ORDER(order, ENIGMA_DO_WORD)                                 \
    } else {                                                                   \
      ENIGMA_WITH_ORDER(order, ENIGMA_DO_PLAIN)                                \
    }                                                                          \
  }
#define ENIGMA_DO_WORD(o) return T(ENIGMA_BUILTIN(w, x, o, ENIGMA_SCOPE));
#define ENIGMA_DO_PLAIN(o) return ENIGMA_BUILTIN(p, v, o, ENIGMA_SCOPE);

#define ENIGMA_BUILTIN __nv_atomic_fetch_add
ENIGMA_ATOMIC_RMW(atomic_fetch_add_explicit, true)
#undef ENIGMA_BUILTIN
#define ENIGMA_BUILTIN __nv_atomic_fetch_sub
ENIGMA_ATOMIC_RMW(atomic_fetch_sub_explicit, true)
#undef ENIGMA_BUILTIN
#define ENIGMA_BUILTIN __nv_atomic_fetch_min
ENIGMA_ATOMIC_RMW(atomic_fetch_min_explicit, false)
#undef ENIGMA_BUILTIN
#define ENIGMA_BUILTIN __nv_atomic_fetch_max
ENIGMA_ATOMIC_RMW(atomic_fetch_max_explicit, false)
#undef ENIGMA_BUILTIN
#define ENIGMA_BUILTIN __nv_atomic_fetch_and
ENIGMA_ATOMIC_RMW(atomic_fetch_and_explicit, false)
#undef ENIGMA_BUILTIN
#define ENIGMA_BUILTIN __nv_atomic_fetch_or
ENIGMA_ATOMIC_RMW(atomic_fetch_or_explicit, false)
#undef ENIGMA_BUILTIN
#define ENIGMA_BUILTIN __nv_atomic_fetch_xor
ENIGMA_ATOMIC_RMW(atomic_fetch_xor_explicit, false)
#undef ENIGMA_BUILTIN
#undef ENIGMA_DO_WORD
#undef ENIGMA_DO_PLAIN
#undef ENIGMA_ATOMIC_RMW
#undef ENIGMA_WITH_ORDER
#undef ENIGMA_WITH_LOAD_ORDER
#undef ENIGMA_WITH_STORE_ORDER
#undef ENIGMA_SCOPE

#include "enigma_cuda_vectors.cuh"
#include "enigma_cuda_math.cuh"
#include "enigma_cuda_simdgroup_matrix.cuh"
#include "enigma_cuda_vector_memory.cuh"
#include "enigma_cuda_async_copy.cuh"

#endif /* ENIGMA_CUDA_PRELUDE_CUH */
