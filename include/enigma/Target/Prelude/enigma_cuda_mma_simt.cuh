/*===- enigma_cuda_mma_simt.cuh - Float products in registers -*- CUDA -*-===*
 *
 * Float tiles without TF32: each lane's part of the mma.sync accumulator
 * layout (enigma_cuda_mma.cuh) summed with FMA, the operands read from
 * threadgroup memory at offsets worked out once per product where the
 * tiles' swizzles allow (docs/design/fma-products.md); and the TF32
 * product's reads of an N-contiguous B, which share that split. Included
 * by enigma_cuda_mma.cuh after the Tile type and the 16-bit products.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_MMA_SIMT_CUH
#define ENIGMA_CUDA_MMA_SIMT_CUH

namespace enigma_mma {

/* ---- float operands without TF32: FMA in registers ----------------------- */

template <int M, int N, int K, class TA, class TB>
__device__ __forceinline__ void mma_simt(float *acc, const TA &A, const TB &B,
                                         unsigned lane) {
  const int g = int(lane >> 2), t = int(lane & 3u);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    float av[M / 8], bv[N / 4];
#pragma unroll
    for (int s = 0; s < M / 8; ++s)
      av[s] = A(16 * (s >> 1) + g + 8 * (s & 1), k);
#pragma unroll
    for (int s = 0; s < N / 4; ++s)
      bv[s] = B(k, 8 * (s >> 1) + 2 * t + (s & 1));
#pragma unroll
    for (int i = 0; i < M * N / 32; ++i)
      acc[i] = fmaf(av[row_slot<N>(i)],
                    bv[2 * ((i >> 2) % (N / 8)) + (i & 1)], acc[i]);
  }
}

/* Offsets of the FMA path's loads with the swizzle worked out once per
 * product instead of once per load (each costs several 64-bit integer
 * instructions, as many as the FMAs they feed), where the tiles allow.
 *
 * A, rows g + 8 j at column k4: a swizzle leaves bits from its span up
 * alone, so when 8 rows are a whole number of spans, row g's offset plus
 * 8 j Ld is row g + 8 j's.
 * B, row k at columns 8 s + 2 t: when rows start on multiples of 2^P (the
 * swizzle's first input bit) and the swizzle's input bits past the column
 * offset `off` are zero, the mask is a constant of k; the column offset
 * (a multiple of Nb), 8 s and 2 t then occupy disjoint bits, so the XOR
 * splits into a per-product part, a compile-time part and one of two
 * values of the lane. */
/* 2^e, or 0 when e is outside 0..62 (a span too wide for the fast paths;
 * the verifier allows swizzle bases and shifts up to 24 each). */
constexpr u64 pow2_or_zero(int e) { return e < 0 || e > 62 ? 0ull : 1ull << e; }

template <class TA> struct simt_a_rows {
  static constexpr u64 kSpan = pow2_or_zero(TA::kS0 + TA::kS1 + TA::kS2);
  static constexpr bool value =
      !TA::kTrans && TA::kBs == 0 && TA::kS2 >= 0 &&
      (TA::kS0 == 0 || (kSpan != 0 && (8ull * TA::kLd) % kSpan == 0));
};
/* B's columns split for reads at `row start + constant`: an N-contiguous
 * B, swizzled so that a row's mask depends on the row alone. A B stored in
 * column blocks (Bs > 0, blocks of Ld columns) is read block by block: W
 * columns per block (N, or Ld when N spans whole blocks), the blocks Bs
 * apart, Bs a multiple of the swizzle's period so that every block has
 * the first one's masks. */
template <class TB, int N> struct simt_b_cols {
  enum : int {
    P = TB::kS1 + TB::kS2,
    W = TB::kBs > 0 && N > TB::kLd ? TB::kLd : N,
    Nb = W <= 8 ? 8 : W <= 16 ? 16 : W <= 32 ? 32 : W <= 64 ? 64 : 128
  };
  static constexpr u64 kRowSpan = pow2_or_zero(P); /* 2^P */
  static constexpr u64 kPeriod = pow2_or_zero(TB::kS0 + P);
  static constexpr bool kBlocksFit =
      TB::kBs == 0 ||
      (N % W == 0 && W % 8 == 0 && TB::kBs % TB::kLd == 0 &&
       (TB::kS0 == 0 || (kPeriod != 0 && u64(TB::kBs) % kPeriod == 0)));
  static constexpr bool value =
      !TB::kTrans && kBlocksFit && TB::kS2 >= 0 && N <= 128 &&
      (TB::kS0 == 0 ||
       (kRowSpan != 0 && u64(TB::kLd) % kRowSpan == 0 &&
        TB::kS0 <= TB::kS2 && u64(Nb) <= kRowSpan));
  /* B's offset below 2^P (with value, P < 31: Ld is a multiple of 2^P). */
  static __device__ __forceinline__ unsigned low(u64 off) {
    return TB::kS0 == 0 ? 0u : unsigned(off & (kRowSpan - 1ull));
  }
  /* Whether B's column offset fits the split (uniform per warp). */
  static __device__ __forceinline__ bool fits(u64 off) {
    if constexpr (TB::kS0 == 0)
      return true;
    else
      return (off & u64(Nb - 1)) == 0 &&
             ((off >> P) & ((1ull << TB::kS0) - 1ull)) == 0;
  }
  /* The swizzle mask of row k (B's offset fitting). */
  static __device__ __forceinline__ constexpr unsigned mask(int k) {
    if constexpr (!value || TB::kS0 == 0)
      return 0u;
    else
      return ((unsigned(k) * unsigned(TB::kLd >> P)) &
              ((1u << TB::kS0) - 1u))
             << TB::kS1;
  }
  /* Column 8 s + c (c < 8) of a row with mask m, from the row's start less
   * B's low offset `lo`: the mask's bits from Nb up go with lo, its bits 3
   * to Nb with 8 s, those below 3 with c. */
  static __device__ __forceinline__ unsigned column(unsigned lo, unsigned m,
                                                    unsigned s, unsigned c) {
    return (lo ^ (m & ~unsigned(Nb - 1))) +
           ((8u * s) ^ (m & unsigned(Nb - 1) & ~7u)) + (c ^ (m & 7u));
  }
  /* Column 8 s + c of the whole tile: column() in block s / (W / 8). */
  static __device__ __forceinline__ unsigned at(unsigned lo, unsigned m,
                                                unsigned s, unsigned c) {
    return column(lo, m, s % unsigned(W / 8), c) +
           unsigned(TB::kBs) * (s / unsigned(W / 8));
  }
  /* at() as a value of the lane (lo, c) plus a compile-time part (s, and m
   * once the loop over k is unrolled): added to a pointer apart, the
   * compile-time part becomes the load's immediate offset, where an
   * unsigned sum of both (which may wrap, as far as the compiler knows)
   * cost an add and an address computation per load. */
  static __device__ __forceinline__ unsigned lane_part(unsigned lo,
                                                       unsigned m,
                                                       unsigned c) {
    return (lo ^ (m & ~unsigned(Nb - 1))) + (c ^ (m & 7u));
  }
  static __device__ __forceinline__ constexpr int fixed_part(unsigned m,
                                                             int s) {
    return int((8u * unsigned(s % (W / 8))) ^ (m & unsigned(Nb - 1) & ~7u)) +
           TB::kBs * (s / (W / 8));
  }
};

/* Vectorised FMA path for a K-contiguous A (float4 per row and 4 k) and an
 * N-contiguous B (float2 per column pair); FastB: B's offset fits
 * simt_b_cols's split. */
template <int M, int N, int K, bool FastB, class TA, class TB>
__device__ __forceinline__ void mma_simt_vec_loads(float *acc, const TA &A,
                                                   const TB &B,
                                                   unsigned lane) {
  typedef simt_b_cols<TB, N> BCols;
  constexpr bool kFastA = simt_a_rows<TA>::value;
  const int g = int(lane >> 2), t = int(lane & 3u);
  /* B's split: row k, column 8 s + 2 t at bHi + k Ld + column(...). */
  const unsigned lo = FastB ? BCols::low(B.off) : 0u;
  const float *bHi = B.p + B.base + (B.off - lo);
  /* Runs of 8 k in a loop that is not unrolled: a whole deep tile unrolled
   * outgrows the instruction cache (the profiler's "no instruction"
   * stalls). B's masks repeat every 8 rows, so they stay constants. */
  constexpr int Run = K % 8 == 0 && TB::kS0 <= 3 ? 8 : K;
#pragma unroll 1
  for (int k0 = 0; k0 < K; k0 += Run) {
    const float *bRun = bHi + k0 * TB::kLd;
#pragma unroll
    for (int kr = 0; kr < Run; kr += 4) {
      const int k4 = k0 + kr;
      float4 av[M / 8];
      const float *aRow = A.p + (kFastA ? A.at(g, k4) : 0);
#pragma unroll
      for (int s = 0; s < M / 8; ++s) /* row 16 (s / 2) + g + 8 (s % 2) */
        av[s] = kFastA ? *(const float4 *)&aRow[8 * s * TA::kLd]
                       : *(const float4 *)&A.p[A.at(g + 8 * s, k4)];
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        float2 bv[N / 8];
        const unsigned m = BCols::mask(kr + kk); /* = mask(k4 + kk) */
        const float *bRow = bRun + BCols::lane_part(lo, m, 2u * t);
#pragma unroll
        for (int s = 0; s < N / 8; ++s)
          bv[s] = FastB ? *(const float2 *)&bRow[(kr + kk) * TB::kLd +
                                                 BCols::fixed_part(m, s)]
                        : *(const float2 *)&B.p[B.at(k4 + kk, 8 * s + 2 * t)];
#pragma unroll
        for (int i = 0; i < M * N / 32; ++i) {
          const float4 a = av[row_slot<N>(i)];
          const float ak = kk == 0   ? a.x
                           : kk == 1 ? a.y
                           : kk == 2 ? a.z
                                     : a.w;
          const float2 b = bv[(i >> 2) % (N / 8)];
          acc[i] = fmaf(ak, (i & 1) ? b.y : b.x, acc[i]);
        }
      }
    }
  }
}

/* The TF32 product's reads of an N-contiguous B: lane (g, t) reads rows
 * 8 kk + t and 8 kk + t + 4 at columns 8 s + g. With simt_b_cols's split
 * and a swizzle of at most 3 bits, a row's mask depends only on the row
 * modulo 8, t + 4 e here, so the lane works out its 2 N / 8 offsets once
 * per product and every read is `base + offset + immediate`. */
template <class TB, int N> struct tf32_b_rows {
  typedef simt_b_cols<TB, N> BCols;
  enum : bool { kSplit = BCols::value && TB::kS0 <= 3 };
  const float *hi = nullptr;
  unsigned off[2][N / 8];
  bool fast = false;
  __device__ __forceinline__ tf32_b_rows(const TB &B, unsigned lane) {
    if constexpr (kSplit) {
      if (!BCols::fits(B.off))
        return;
      const unsigned g = lane >> 2, t = lane & 3u, lo = BCols::low(B.off);
      hi = B.p + B.base + (B.off - lo);
      fast = true;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const unsigned row = t + 4u * unsigned(e), m = BCols::mask(int(row));
#pragma unroll
        for (int s = 0; s < N / 8; ++s)
          off[e][s] = row * unsigned(TB::kLd) +
                      BCols::at(lo, m, unsigned(s), g);
      }
    }
  }
  /* B(8 kk + t + 4 e, 8 s + g). */
  __device__ __forceinline__ float at(int kk, int e, int s) const {
    return hi[8 * kk * TB::kLd + off[e][s]];
  }
};

template <int M, int N, int K, class TA, class TB>
__device__ __forceinline__ void mma_simt_vec(float *acc, const TA &A,
                                             const TB &B, unsigned lane) {
  typedef simt_b_cols<TB, N> BCols;
  if constexpr (BCols::value) {
    if (BCols::fits(B.off)) {
      mma_simt_vec_loads<M, N, K, true>(acc, A, B, lane);
      return;
    }
  }
  mma_simt_vec_loads<M, N, K, false>(acc, A, B, lane);
}

} // namespace enigma_mma

#endif /* ENIGMA_CUDA_MMA_SIMT_CUH */
