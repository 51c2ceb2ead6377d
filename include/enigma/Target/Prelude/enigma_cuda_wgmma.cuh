/*===- enigma_cuda_wgmma.cuh - Warpgroup products on sm_90a ------*- CUDA -*-===*
 *
 * The Hopper path of a warpgroup `enigma.mma` (docs/design/wgmma.md): the
 * four warps of a warpgroup each hold a 16 x N accumulator, together the
 * 64 x N product of one 64 x K tile of A and a K x N tile of B that
 * wgmma.mma_async reads straight from shared memory. Tiles must be stored
 * the way the instruction's 128-byte swizzle expects: rows of 64 16-bit
 * elements (128 bytes) under Swizzle<3, 3, 3>, the pattern anchored at a
 * 1024-byte boundary; a K x N B (MN-major) in blocks of 64 columns. The
 * caller checks those facts (enigma_mma_sync) and falls back to mma.sync.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_WGMMA_CUH
#define ENIGMA_CUDA_WGMMA_CUH

#include "enigma_cuda_wgmma_ops.cuh"

namespace enigma_wgmma {

typedef unsigned long long u64;

template <bool C, class A, class B> struct pick { typedef A type; };
template <class A, class B> struct pick<false, A, B> { typedef B type; };

/* A shared-memory matrix descriptor with the 128-byte swizzle: start
 * address, leading and stride byte offsets (each in 16-byte units). */
__device__ __forceinline__ u64 descriptor(unsigned addr, unsigned lead,
                                          unsigned stride) {
  return u64((addr & 0x3FFFFu) >> 4) | (u64((lead & 0x3FFFFu) >> 4) << 16) |
         (u64((stride & 0x3FFFFu) >> 4) << 32) | (u64(1) << 62);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && !defined(ENIGMA_MMA_EMULATION)
#define ENIGMA_HAS_WGMMA 1

/* Keeps the compiler from moving an accumulator register across the
 * asynchronous instructions. */
__device__ __forceinline__ void pin(float &x) {
  asm volatile("" : "+f"(x)::"memory");
}

/* d += A * B for this warp's 16 x N rows of the warpgroup's 64 x N
 * product over K: `a` is the shared address of the 64 x K A tile (K-major),
 * `b` of the B tile; TransB: B is K x N in 64-column blocks `block` bytes
 * apart (MN-major), else N x K (K-major). Async: returns with this product
 * in flight (the previous one complete). */
template <bool Half, int N, int K, bool TransB, bool Async>
__device__ __forceinline__ void product(float *d, unsigned a, unsigned b,
                                        unsigned block) {
  typedef typename pick<Half, f16_tag, bf16_tag>::type Tag;
#pragma unroll
  for (int i = 0; i < N / 2; ++i)
    pin(d[i]);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    /* A: 8-row groups 1024 bytes apart; a K step of 16 is 32 bytes on. */
    const u64 da = descriptor(a + 32u * kk, 16u, 1024u);
    /* B, MN-major: K steps are 16 rows of 128 bytes; K-major as A. */
    const u64 db = TransB ? descriptor(b + 2048u * kk, block, 1024u)
                          : descriptor(b + 32u * kk, 16u, 1024u);
    op<Tag, N, TransB ? 1 : 0>::run(d, da, db);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  /* Async: this product may stay in flight; the previous one is done, so
   * its tiles may be overwritten once every warpgroup is past a barrier. */
  if (Async)
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  else
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
  for (int i = 0; i < N / 2; ++i)
    pin(d[i]);
}

/* Waits for all of the warpgroup's products (enigma_mma_wait). */
__device__ __forceinline__ void wait_all(float *d, int n) {
  for (int i = 0; i < n; ++i)
    pin(d[i]);
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < n; ++i)
    pin(d[i]);
}
#endif

} // namespace enigma_wgmma

#endif /* ENIGMA_CUDA_WGMMA_CUH */
