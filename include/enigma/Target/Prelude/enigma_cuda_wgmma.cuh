/*===- enigma_cuda_wgmma.cuh - Warpgroup products on sm_90a ------*- CUDA -*-===*
 *
 * The Hopper path of a warpgroup `enigma.mma` (docs/design/wgmma.md): the
 * four warps of a warpgroup each hold a 16 x N accumulator, together the
 * 64 x N product of one 64 x K tile of A and a K x N tile of B that
 * wgmma.mma_async reads straight from shared memory. Tiles must be stored
 * the way the instruction's 128-byte swizzle expects: rows of 128 bytes
 * (64 16-bit elements under Swizzle<3, 3, 3>, 32 floats read as tf32
 * under Swizzle<3, 2, 3>, 128 8-bit floats under Swizzle<3, 4, 3>), the
 * pattern anchored at a 1024-byte boundary; more than one row's worth of
 * columns in blocks. A may also come from registers (16-bit types). The callers check those facts
 * (enigma_mma_sync, enigma_mma_reg) and fall back to mma.sync.
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

/* Starts a warpgroup product: wgmma reads shared memory through the async
 * proxy, so the generic-proxy writes that filled the tiles (cp.async,
 * stores; ordered before this thread by the threadgroup barrier) are made
 * visible to it first; then the registers. Kernels whose shared memory
 * only tile copies write fence at each copy wait instead
 * (ENIGMA_FENCE_AT_COPY_WAIT, lib/Target/CUDA/CudaProxyFence.h). */
__device__ __forceinline__ void begin_product() {
#ifndef ENIGMA_FENCE_AT_COPY_WAIT
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/* Keeps the compiler from moving an accumulator register across the
 * asynchronous instructions. */
__device__ __forceinline__ void pin(float &x) {
  asm volatile("" : "+f"(x)::"memory");
}

/* The descriptor of the matrix `offset` bytes (a multiple of 16) after
 * the one `desc` describes. Its address field counts 16-byte units and
 * shared addresses stay below 2^18, so the sum does not carry into the
 * other fields: one add per K step instead of a new descriptor. */
__device__ __forceinline__ u64 advanced(u64 desc, unsigned offset) {
  return desc + u64(offset >> 4);
}

/* A shared address as the warp's lane 0 holds it. Every lane passes the
 * same address (wgmma needs one descriptor per warpgroup), but ptxas
 * cannot prove that of values derived from threadIdx: it would build each
 * descriptor in ordinary registers and move it to uniform ones before
 * every wgmma. A value read from one lane it knows is uniform, so the
 * descriptors are built and advanced in the uniform datapath (the
 * prelude's shuffle, enigma_cuda_prelude.cuh, which includes this file
 * after defining it). */
__device__ __forceinline__ unsigned warp_uniform(unsigned addr) {
  return enigma_detail::read_lane(0xffffffffu, addr, 0u);
}

/* Bytes from a K-major tile to its K step kk (16 elements): 32 bytes on
 * within a 128-byte row, `block` bytes per 64 elements of K. */
__device__ __forceinline__ unsigned k_step(int kk, unsigned block) {
  return block * unsigned(kk >> 2) + 32u * unsigned(kk & 3);
}

/* A K-major tile's descriptor (A's, or a K-major B's). */
__device__ __forceinline__ u64 k_major(unsigned tile) {
  return descriptor(tile, 16u, 1024u);
}

/* B's descriptor at K step 0: MN-major (TransB, K x N in 64-column blocks
 * `block` bytes apart); K-major (N x K, in 64-element blocks of K) as A. */
template <bool TransB>
__device__ __forceinline__ u64 b_descriptor(unsigned b, unsigned block) {
  return TransB ? descriptor(b, block, 1024u) : k_major(b);
}

/* Bytes from B's K step 0 to K step kk: MN-major steps over 16 rows of 128
 * bytes. */
template <bool TransB>
__device__ __forceinline__ unsigned b_step(int kk, unsigned block) {
  return TransB ? 2048u * unsigned(kk) : k_step(kk, block);
}

/* One wgmma group on the accumulator d: issue(kk, scale_d) for each K
 * step of 16 between the fences and the commit; then waits for every group
 * (Async: for every group but this one, which stays in flight; the
 * previous one is done, so its tiles may be overwritten once every
 * warpgroup is past a barrier). Zero: d's values are not read (the first
 * step's scale_d is 0), so d need not be zeroed: d = A * B. */
template <int N, int K, bool Async, bool Zero, class Issue>
__device__ __forceinline__ void group(float *d, Issue issue) {
  if (!Zero) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i)
      pin(d[i]);
  }
  begin_product();
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    issue(kk, Zero && kk == 0 ? 0 : 1);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  if (Async)
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  else
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
  for (int i = 0; i < N / 2; ++i)
    pin(d[i]);
}

/* d += A * B for this warp's 16 x N rows of the warpgroup's 64 x N
 * product over K: `a` is the shared address of the 64 x K A tile (K-major,
 * 64-element blocks of K `a_block` bytes apart), `b` of the B tile (see
 * b_descriptor). Async: returns with this product in flight (the previous
 * one complete). 8-row groups are 1024 bytes apart in both tiles. */
template <bool Half, int N, int K, bool TransB, bool Async, bool Zero = false>
__device__ __forceinline__ void product(float *d, unsigned a, unsigned a_block,
                                        unsigned b, unsigned b_block) {
  typedef typename pick<Half, f16_tag, bf16_tag>::type Tag;
  const u64 a0 = k_major(warp_uniform(a)),
            b0 = b_descriptor<TransB>(warp_uniform(b), b_block);
  group<N, K, Async, Zero>(d, [&](int kk, int scale_d) {
    op<Tag, Tag, N, TransB ? 1 : 0>::run(
        d, advanced(a0, k_step(kk, a_block)),
        advanced(b0, b_step<TransB>(kk, b_block)), scale_d);
  });
}

/* d += A * B for operand types the instruction reads only K-major (tf32,
 * e4m3, e5m2): both tiles K-major with 128-byte rows, blocks of 128 bytes
 * of K `a_block` / `b_block` bytes apart. One instruction reads 32 bytes
 * of K whatever the type, so K16 counts K in 16-bit elements (the tiles'
 * bytes / 2) and the descriptors advance as for 16-bit K-major tiles. */
template <class ATag, class BTag, int N, int K16, bool Async,
          bool Zero = false>
__device__ __forceinline__ void product_k_major(float *d, unsigned a,
                                                unsigned a_block, unsigned b,
                                                unsigned b_block) {
  const u64 a0 = k_major(warp_uniform(a)), b0 = k_major(warp_uniform(b));
  group<N, K16, Async, Zero>(d, [&](int kk, int scale_d) {
    op<ATag, BTag, N, 0>::run(d, advanced(a0, k_step(kk, a_block)),
                              advanced(b0, k_step(kk, b_block)), scale_d);
  });
}

/* d += A * B with this warp's 16 x K rows of A in registers: `a` holds 4
 * registers per K step of 16, the mma.sync m16n8k16 A fragment. Complete
 * on return, or with Async in flight (the previous group complete); the
 * instructions read A's registers asynchronously, and ptxas keeps them
 * until the group is waited for. The emitter asks for this only when A
 * changes from one iteration of the loop around the product to the next
 * (EmitMma.cpp says why). */
template <bool Half, int N, int K, bool TransB, bool Async, bool Zero = false>
__device__ __forceinline__ void product_rs(float *d, unsigned *a, unsigned b,
                                           unsigned b_block) {
  typedef typename pick<Half, f16_tag, bf16_tag>::type Tag;
  const u64 b0 = b_descriptor<TransB>(warp_uniform(b), b_block);
  group<N, K, Async, Zero>(d, [&](int kk, int scale_d) {
    op_rs<Tag, Tag, N, TransB ? 1 : 0>::run(
        d, a + 4 * kk, advanced(b0, b_step<TransB>(kk, b_block)), scale_d);
  });
#pragma unroll
  for (int i = 0; i < K / 4; ++i)
    asm volatile("" : "+r"(a[i])::"memory");
}

/* d += A * B for tf32 with this warp's 16 x K rows of A in registers (4
 * per K step of 8: the mma.sync m16n8k8 tf32 A fragment) and B a K-major
 * tile with 128-byte rows, blocks of 128 bytes of K `b_block` bytes apart
 * (as product_k_major's B). What an A stored M-major needs: the
 * instruction reads 32-bit operands in shared memory only K-major. */
template <int N, int K, bool Async, bool Zero = false>
__device__ __forceinline__ void product_rs_tf32(float *d, unsigned *a,
                                                unsigned b, unsigned b_block) {
  const u64 b0 = k_major(warp_uniform(b));
  /* K steps of 8 floats are 32 bytes, one 16-bit step of group's count. */
  group<N, 2 * K, Async, Zero>(d, [&](int kk, int scale_d) {
    op_rs<tf32_tag, tf32_tag, N, 0>::run(
        d, a + 4 * kk, advanced(b0, k_step(kk, b_block)), scale_d);
  });
#pragma unroll
  for (int i = 0; i < K / 2; ++i)
    asm volatile("" : "+r"(a[i])::"memory");
}

/* Waits for all of the warpgroup's products (enigma_mma_wait). */
__device__ __forceinline__ void wait_all(float *d, int n) {
  for (int i = 0; i < n; ++i)
    pin(d[i]);
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  for (int i = 0; i < n; ++i)
    pin(d[i]);
}

/* An asynchronous warpgroup product that runs as mma.sync (tiles wgmma
 * cannot read, or not aligned at run time) keeps the contract of one that
 * runs as wgmma: the group's earlier products are complete when it starts
 * (their tiles may be refilled), and it counts as one group (an empty
 * one), so that enigma_mma_wait_pending's count of newer products holds. */
__device__ __forceinline__ void synchronous_product_begin() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void synchronous_product_end() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Waits until at most `Pending` of the warpgroup's products are in flight
 * (enigma_mma_wait_pending): d, older than those, is complete. */
template <int Pending>
__device__ __forceinline__ void wait_older(float *d, int n) {
  for (int i = 0; i < n; ++i)
    pin(d[i]);
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending)
               : "memory");
  for (int i = 0; i < n; ++i)
    pin(d[i]);
}
#endif

} // namespace enigma_wgmma

#endif /* ENIGMA_CUDA_WGMMA_CUH */
