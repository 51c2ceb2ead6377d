//===- TestKernels.h - Hand-written kernels in Enigma's CUDA ABI -*- C++ -*-===//
//
// Sources shaped exactly like the emitter's output (prelude include,
// extern "C" __global__, EnigmaCudaLaunch last), shared by the NVRTC-only
// tests and the GPU tests.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_UNITTESTS_CUDA_TESTKERNELS_H
#define ENIGMA_UNITTESTS_CUDA_TESTKERNELS_H

namespace enigma::test {

inline const char *kVectorAddSource = R"(#include "enigma_cuda_prelude.cuh"
extern "C" __global__ void enigma_kernel_vector_add(const float *A,
                                                    const float *B, float *C,
                                                    EnigmaCudaLaunch launch) {
  uint tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= launch.grid[0])
    return;
  C[tid] = A[tid] + B[tid];
}
)";

/// Scalar parameters of three widths and a function constant.
inline const char *kScaleSource = R"(#include "enigma_cuda_prelude.cuh"
extern "C" __global__ void enigma_kernel_scale(const float *A, float factor,
                                               short offset, ulong big,
                                               float *C,
                                               EnigmaCudaLaunch launch) {
  uint tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid >= launch.grid[0])
    return;
  const int bias = ENIGMA_FUNCTION_CONSTANT(0);
  C[tid] = A[tid] * factor + float(offset) + float(big >> 32) + float(bias);
}
)";

/// Calls every helper of the prelude at least once, for each type family
/// it supports, so a prelude that stops compiling is caught without a GPU.
inline const char *kEveryHelperSource = R"(#include "enigma_cuda_prelude.cuh"
template <class T> __device__ T int_ops(T a, T b) {
  T r = absdiff(a, b) + addsat(a, b) + subsat(a, b) + mulhi(a, b);
  r ^= madsat(a, b, a) + rotate(a, 3u) + clz(a) + ctz(b) + popcount(a);
  r ^= reverse_bits(a) + extract_bits(a, 1u, 3u) + insert_bits(a, b, 2u, 4u);
  r ^= abs(a) + clamp(a, T(0), b);
  return r;
}
template <class T> __device__ T simd_ops(T v) {
  T r = simd_sum(v) + simd_product(v) + simd_min(v) + simd_max(v);
  r += simd_prefix_inclusive_sum(v) + simd_prefix_exclusive_sum(v);
  r += simd_prefix_inclusive_product(v) + simd_prefix_exclusive_product(v);
  r += simd_shuffle(v, 3u) + simd_shuffle_up(v, 1u) + simd_shuffle_down(v, 2u);
  r += simd_shuffle_xor(v, 5u) + simd_broadcast(v, 0u) + simd_broadcast_first(v);
  r += quad_sum(v) + quad_product(v) + quad_min(v) + quad_max(v);
  r += quad_prefix_inclusive_sum(v) + quad_prefix_exclusive_sum(v);
  r += quad_shuffle(v, 1u) + quad_shuffle_up(v, 1u) + quad_shuffle_down(v, 1u);
  r += quad_shuffle_xor(v, 2u) + quad_broadcast(v, 3u);
  return r;
}
template <class T> __device__ T bit_ops(T v) {
  return simd_and(v) ^ simd_or(v) ^ simd_xor(v) ^ quad_and(v) ^ quad_or(v) ^
         quad_xor(v);
}
template <class T> __device__ T float_ops(T x, T y, T z) {
  T r = sqrt(x) + rsqrt(x) + abs(x) + ceil(x) + floor(x) + round(x);
  r = r + trunc(x) + sign(x) + saturate(x) + fract(x) + exp(x) + exp2(x);
  r = r + log(x) + log2(x) + log10(x) + sin(x) + cos(x) + tan(x) + asin(x);
  r = r + acos(x) + atan(x) + sinh(x) + cosh(x) + tanh(x) + fmin(x, y);
  r = r + fmax(x, y) + pow(x, y) + fmod(x, y) + atan2(x, y) + step(x, y);
  r = r + copysign(x, y) + clamp(x, y, z) + fma(x, y, z) + mix(x, y, z);
  r = r + smoothstep(x, y, z) + min(x, y) + max(x, y);
  bool p = isnan(x) || isinf(x) || isfinite(y) || signbit(z) || isnormal(x);
  return p ? r : x;
}
template <class T> __device__ T atomic_ops(T *p, T v) {
  T r = atomic_fetch_add_explicit(p, v, memory_order_relaxed);
  r += atomic_fetch_sub_explicit(p, v, memory_order_acq_rel);
  r += atomic_exchange_explicit(p, v, memory_order_seq_cst);
  r += atomic_load_explicit(p, memory_order_acquire);
  atomic_store_explicit(p, r, memory_order_release);
  T expected = r;
  if (atomic_compare_exchange_weak_explicit(p, &expected, v,
                                            memory_order_relaxed,
                                            memory_order_relaxed))
    r += expected;
  return r;
}
template <class T> __device__ T int_atomic_ops(T *p, T v) {
  T r = atomic_ops(p, v);
  r += atomic_fetch_min_explicit(p, v, memory_order_relaxed);
  r += atomic_fetch_max_explicit(p, v, memory_order_acquire);
  r += atomic_fetch_and_explicit(p, v, memory_order_release);
  r += atomic_fetch_or_explicit(p, v, memory_order_acq_rel);
  r += atomic_fetch_xor_explicit(p, v, memory_order_seq_cst);
  return r;
}

extern "C" __global__ void enigma_kernel_every_helper(
    float *F, half *H, bfloat *BF, char *I8, uchar *U8, short *I16,
    ushort *U16, int *I32, uint *U32, long *I64, ulong *U64, bool *B1,
    EnigmaCudaLaunch launch) {
  __shared__ int scratch[64];
  uint i = enigma_thread_index_in_threadgroup();
  uint lane = enigma_thread_index_in_simdgroup();
  uint warp = enigma_simdgroup_index_in_threadgroup();
  uint warps = enigma_simdgroups_per_threadgroup();
  uint width = enigma_threads_per_simdgroup();
  scratch[i % 64] = int(lane + warp + warps + width);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  simdgroup_barrier(mem_flags::mem_none);
  simdgroup_barrier(mem_flags::mem_device);

  F[i] = float_ops(F[i], F[i + 1], F[i + 2]) + simd_ops(F[i]);
  H[i] = float_ops(H[i], H[i + 1], H[i + 2]) + simd_ops(H[i]);
  BF[i] = float_ops(BF[i], BF[i + 1], BF[i + 2]) + simd_ops(BF[i]);
  I8[i] = int_ops((signed char)I8[i], (signed char)I8[i + 1]);
  U8[i] = int_ops(U8[i], U8[i + 1]) + simd_ops(U8[i]) + bit_ops(U8[i]);
  I16[i] = int_ops(I16[i], I16[i + 1]) + simd_ops(I16[i]) + bit_ops(I16[i]);
  U16[i] = int_ops(U16[i], U16[i + 1]) + simd_ops(U16[i]);
  I32[i] = int_ops(I32[i], I32[i + 1]) + simd_ops(I32[i]) + bit_ops(I32[i]);
  U32[i] = int_ops(U32[i], U32[i + 1]) + simd_ops(U32[i]) + bit_ops(U32[i]);
  I64[i] = int_ops(I64[i], I64[i + 1]) + simd_ops(I64[i]) + bit_ops(I64[i]);
  U64[i] = int_ops(U64[i], U64[i + 1]) + simd_ops(U64[i]) + bit_ops(U64[i]);
  B1[i] = simd_shuffle(B1[i], 2u) || simd_any(B1[i]) || simd_all(B1[i]);

  I32[0] += int_atomic_ops((atomic_int *)&I32[1], I32[i]);
  U32[0] += int_atomic_ops((atomic_uint *)&U32[1], U32[i]);
  U64[0] += int_atomic_ops((atomic_ulong *)&U64[1], U64[i]);
  I64[0] += int_atomic_ops(&I64[1], I64[i]);
  F[0] += atomic_ops((atomic_float *)&F[1], F[i]);
  I32[2] += int_atomic_ops(&scratch[0], I32[i]);
  I32[3] = ENIGMA_FUNCTION_CONSTANT(1) + int(launch.grid[0]);
  F[3] = ENIGMA_FUNCTION_CONSTANT(2);
  H[3] = ENIGMA_FUNCTION_CONSTANT(3);
}
)";

inline const char *kSyntaxErrorSource = R"(#include "enigma_cuda_prelude.cuh"
extern "C" __global__ void enigma_kernel_broken(float *A,
                                                EnigmaCudaLaunch launch) {
  A[threadIdx.x] = undeclared_name + ;
}
)";

} // namespace enigma::test

#endif
