/*===- enigma_cuda_prelude.cuh - Metal's builtins for CUDA kernels --------===*
 *
 * Included by every CUDA kernel Enigma generates and compiled by NVRTC, so
 * the emitter can print Metal's names (uint, half, clamp, simd_sum,
 * threadgroup_barrier, atomic_fetch_add_explicit, ...) for CUDA too. Metal's
 * semantics are the reference. Types, vectors, math, integer, geometry,
 * packing and as_type are the semantics library the CPU backend uses too
 * (metal_semantics.h); this prelude adds what only CUDA has: thread
 * positions, barriers, warp functions, atomics, launch guards, and Metal's
 * vector names over CUDA's own. Kept lean: it is parsed for every kernel.
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

/*===--- Metal's value semantics ------------------------------------------===*/

#if ENIGMA_USE_HALF
#include <cuda_fp16.h>
#endif
#if ENIGMA_USE_BFLOAT
#include <cuda_bf16.h>
#endif
#include "metal_semantics.h"
using namespace metal;
#include "enigma_cuda_vectors.cuh"
#include "metal_total_division.h"
#include "metal_float_to_int.h"

#define ENIGMA_FUNCTION_CONSTANT(index) (ENIGMA_FC_##index)

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
  return metal::detail::opaque_u32(x);
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
template <class T, int N>
__device__ inline metal::vec<T, N> enigma_abs(const metal::vec<T, N> &v) {
  metal::vec<T, N> r;
  for (int i = 0; i < N; ++i)
    r[i] = enigma_abs(v[i]);
  return r;
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

#include "enigma_cuda_simdgroup_matrix.cuh"
#include "enigma_cuda_vector_memory.cuh"
#include "enigma_cuda_async_copy.cuh"
#include "enigma_cuda_mma.cuh"
#include "enigma_cuda_tma.cuh"
#include "enigma_cuda_pipeline.cuh"

#endif /* ENIGMA_CUDA_PRELUDE_CUH */
