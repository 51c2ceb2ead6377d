/*===- enigma_cuda_mma_fp8.cuh - Products of 8-bit float tiles -*- CUDA -*-===*
 *
 * enigma.mma with 8-bit float tiles (f8E4M3FN / f8E5M2, docs/design/fp8.md):
 *   - a warpgroup product of wgmma's shape on sm_90a runs as
 *     wgmma.mma_async m64nNk32 with both operands K-major (the only layout
 *     wgmma reads 8-bit types in): A stored M x K and B stored N x K, rows
 *     of 128 elements (128 bytes) under Swizzle<3, 4, 3>, K beyond 128 in
 *     blocks of a 1024-byte multiple, tiles on 1024-byte boundaries;
 *   - any other product converts each element to half, exactly (every
 *     e4m3 and e5m2 value is a half), and runs mma.sync m16n8k16 with f16
 *     operands, so GPUs without 8-bit tensor cores (sm_80) give the same
 *     exact products, summed in f32.
 * Included by the prelude after enigma_cuda_mma.cuh.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_MMA_FP8_CUH
#define ENIGMA_CUDA_MMA_FP8_CUH

namespace enigma_mma {

/* The half (binary16) bits of an 8-bit float of format Fmt (0 e4m3, 1
 * e5m2), exactly; a NaN becomes a quiet half NaN of its sign. e5m2 is the
 * top byte of a half. */
template <int Fmt>
__device__ __forceinline__ unsigned short fp8_half_bits(unsigned char b) {
  if (Fmt == 1)
    return (unsigned short)(unsigned(b) << 8);
  const unsigned s = unsigned(b & 0x80u) << 8, e = (unsigned(b) >> 3) & 15u,
                 m = unsigned(b) & 7u;
  if ((b & 0x7fu) == 0x7fu)
    return (unsigned short)(s | 0x7e00u);
  if (e != 0u) /* 2^(e - 7) (1 + m / 8): half exponent field e + 8 */
    return (unsigned short)(s | ((e + 8u) << 10) | (m << 7));
  if (m >= 4u) /* m 2^-9, normalised: 2^-7 (1 + (m - 4) / 4) */
    return (unsigned short)(s | (8u << 10) | ((m - 4u) << 8));
  if (m >= 2u) /* 2^-8 (1 + (m - 2) / 2) */
    return (unsigned short)(s | (7u << 10) | ((m - 2u) << 9));
  return (unsigned short)(m ? (s | (6u << 10)) : s); /* 2^-9, or zero */
}

/* An 8-bit tile read as halves: what load_a16 / load_b16 read element by
 * element (direct = false; addr() exists for their other branch). */
template <int Fmt, class T> struct Fp8Halves {
  enum : bool { kTrans = T::kTrans };
  T t;
  __device__ __forceinline__ unsigned short operator()(int r, int c) const {
    return fp8_half_bits<Fmt>(t(r, c));
  }
  __device__ __forceinline__ unsigned addr(int sr, int sc) const {
    return t.addr(sr, sc);
  }
};

} // namespace enigma_mma

#if ENIGMA_HAS_WGMMA
namespace enigma_wgmma {
/* d += A * B for this warp's 16 x N rows of the warpgroup's 64 x N
 * product of 8-bit tiles: `a` / `b` are the shared addresses of the
 * K-major tiles (64-row A slab, N-row B), 128-element blocks of K
 * `a_block` / `b_block` bytes apart (product_k_major counts K in 16-bit
 * elements, hence K / 2). */
template <int AFmt, int BFmt, int N, int K, bool Async, bool Zero = false>
__device__ __forceinline__ void product_fp8(float *d, unsigned a,
                                            unsigned a_block, unsigned b,
                                            unsigned b_block) {
  typedef typename pick<AFmt == 0, e4m3_tag, e5m2_tag>::type ATag;
  typedef typename pick<BFmt == 0, e4m3_tag, e5m2_tag>::type BTag;
  product_k_major<ATag, BTag, N, K / 2, Async, Zero>(d, a, a_block, b,
                                                      b_block);
}
} // namespace enigma_wgmma
#endif

/* acc + A * B with A an M x K and B a K x N tile of 8-bit floats (formats
 * AFmt, BFmt) in shared memory; the template parameters are enigma_mma_sync's
 * (Tf32 is ignored). Wg: the warpgroup's product, which sm_90a runs as one
 * wgmma per K step of 32 when the tiles have its shape. */
template <int AFmt, int BFmt, int K, int ALd, bool ATr, int AS0, int AS1,
          int AS2, int ABs, int BLd, bool BTr, int BS0, int BS1, int BS2,
          int BBs, bool Tf32, bool Wg, bool Async, bool ZeroAcc = false,
          class T, int M, int N>
__device__ __forceinline__ enigma_frag<float, M, N>
enigma_mma_fp8(enigma_frag<float, M, N> acc, const T *a,
               enigma_mma::u64 a_base, enigma_mma::u64 a_off, const T *b,
               enigma_mma::u64 b_base, enigma_mma::u64 b_off, unsigned lane) {
  using namespace enigma_mma;
  static_assert(sizeof(T) == 1, "8-bit float tiles are bytes");
  typedef Tile<T, ALd, ATr, AS0, AS1, AS2, ABs> TA;
  typedef Tile<T, BLd, BTr, BS0, BS1, BS2, BBs> TB;
#if ENIGMA_HAS_WGMMA
  if constexpr (Wg && wgmma_k_major_shape<1, M, N, K, ALd, ATr, AS0, AS1,
                                          AS2, ABs, BLd, BTr, BS0, BS1, BS2,
                                          BBs>::value) {
    /* The warpgroup's A tile starts 16 rows per warp before this warp's;
     * the same run-time alignment test as the 16-bit products
     * (enigma_mma_sync), folded away for gemm tiles. */
    const u64 slab = a_off - u64(16 * ALd) * ((threadIdx.x >> 5) & 3u);
    const unsigned a0 = smem(a) + unsigned(a_base);
    const unsigned b0 = smem(b) + unsigned(b_base);
    if (((a0 | b0) & 1023u) == 0 && (slab % 1024u) == 0 &&
        (b_off % 1024u) == 0) {
      return into_accumulator<ZeroAcc>(acc, [&](float *d) {
        enigma_wgmma::product_fp8<AFmt, BFmt, N, K, Async, ZeroAcc>(
            d, a0 + unsigned(slab), unsigned(ABs), b0 + unsigned(b_off),
            unsigned(BBs));
      });
    }
  }
  if constexpr (Wg && Async)
    enigma_wgmma::synchronous_product_begin();
#endif
  const Fp8Halves<AFmt, TA> A{TA{a, a_base, a_off}};
  const Fp8Halves<BFmt, TB> B{TB{b, b_base, b_off}};
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned af[M / 16][4], bf[N / 16][4];
#pragma unroll
    for (int bi = 0; bi < M / 16; ++bi)
      load_a16(A, bi, kk, lane, false, af[bi]);
#pragma unroll
    for (int jb = 0; jb < N / 16; ++jb)
      load_b16(B, jb, kk, lane, false, bf[jb]);
#pragma unroll
    for (int bi = 0; bi < M / 16; ++bi)
#pragma unroll
      for (int bj = 0; bj < N / 8; ++bj)
        mma16816<true>(&acc.v[4 * (bi * (N / 8) + bj)], af[bi],
                       &bf[bj >> 1][2 * (bj & 1)]);
  }
#if ENIGMA_HAS_WGMMA
  if constexpr (Wg && Async)
    enigma_wgmma::synchronous_product_end();
#endif
  return acc;
}

#endif /* ENIGMA_CUDA_MMA_FP8_CUH */
