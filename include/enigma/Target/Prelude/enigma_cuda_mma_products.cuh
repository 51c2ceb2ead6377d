/*===- enigma_cuda_mma_products.cuh - Tensor-core products -----*- CUDA -*-===*
 *
 * The products of the mma family on fragments (enigma_cuda_mma.cuh holds
 * the fragment type, its loads, stores and reductions): warpgroup products
 * through wgmma where the tiles allow, else mma.sync per warp; the wait for
 * a warpgroup's pending products; and Metal's 8x8 half simdgroup product
 * on the tensor cores. Included by enigma_cuda_mma.cuh after the fragments.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_MMA_PRODUCTS_CUH
#define ENIGMA_CUDA_MMA_PRODUCTS_CUH

/*===--- Products --------------------------------------------------------------===*/

/* The accumulator once the warpgroup's products are complete. */
template <class F> __device__ __forceinline__ F enigma_mma_wait(F acc) {
#if ENIGMA_HAS_WGMMA
  enigma_wgmma::wait_all(acc.v, F::size);
#endif
  return acc;
}

/* The accumulator once all but the warpgroup's `Pending` most recent
 * products are complete (the verifier proved acc's is among those). */
template <int Pending, class F>
__device__ __forceinline__ F enigma_mma_wait_pending(F acc) {
#if ENIGMA_HAS_WGMMA
  enigma_wgmma::wait_older<Pending>(acc.v, F::size);
#endif
  return acc;
}

namespace enigma_mma {
/* Whether a stored tile of `Bytes`-byte elements is one wgmma reads
 * through a descriptor (enigma_cuda_wgmma.cuh): rows of 128 bytes under
 * the 128-byte swizzle in 16-byte chunks (Swizzle<3, 4 - log2 Bytes, 3>),
 * more stored columns than a row holds in blocks of a 1024-byte multiple. */
template <int Bytes, int StoredCols, int Ld, int S0, int S1, int S2, int Bs>
struct wgmma_row_tile {
  enum : bool {
    value = Ld * Bytes == 128 && S0 == 3 &&
            S1 == (Bytes == 1 ? 4 : Bytes == 2 ? 3 : 2) && S2 == 3 &&
            (StoredCols <= Ld ? Bs == 0 || Bs * Bytes % 1024 == 0
                              : Bs > 0 && Bs * Bytes % 1024 == 0)
  };
};

/* The 16-bit tiles: rows of 64 elements under Swizzle<3, 3, 3>. */
template <class T, int StoredCols, int Ld, int S0, int S1, int S2, int Bs>
struct wgmma_tile {
  enum : bool {
    value = sizeof(T) == 2 &&
            wgmma_row_tile<2, StoredCols, Ld, S0, S1, S2, Bs>::value
  };
};

/* Whether a warpgroup product has the shapes wgmma runs: 16 rows per warp,
 * N of 64, 128 or 256, K a multiple of 16, B as wgmma_tile either way. */
template <class T, int M, int N, int K, int BLd, bool BTr, int BS0, int BS1,
          int BS2, int BBs>
struct wgmma_b_shape {
  enum : bool {
    value = M == 16 && (N == 64 || N == 128 || N == 256) && K % 16 == 0 &&
            wgmma_tile<T, BTr ? K : N, BLd, BS0, BS1, BS2, BBs>::value
  };
};

/* Whether a warpgroup product of `Bytes`-byte tiles the instruction reads
 * only K-major (tf32: 4, e4m3 / e5m2: 1) runs as wgmma: 16 rows per warp,
 * N of 64, 128 or 256, K a multiple of one instruction's 32 bytes, and
 * both operands K-major wgmma_row_tiles (A stored M x K, B stored N x K). */
template <int Bytes, int M, int N, int K, int ALd, bool ATr, int AS0,
          int AS1, int AS2, int ABs, int BLd, bool BTr, int BS0, int BS1,
          int BS2, int BBs>
struct wgmma_k_major_shape {
  enum : bool {
    value = M == 16 && (N == 64 || N == 128 || N == 256) &&
            K % (32 / Bytes) == 0 && !ATr && BTr &&
            wgmma_row_tile<Bytes, K, ALd, AS0, AS1, AS2, ABs>::value &&
            wgmma_row_tile<Bytes, K, BLd, BS0, BS1, BS2, BBs>::value
  };
};

/* Whether a tf32 warpgroup product with A stored K x M (M-major, which the
 * instruction cannot read from shared memory) runs as wgmma with A loaded
 * into registers: 16 rows per warp, N of 64, 128 or 256, K a multiple of
 * 8, B a K-major wgmma_row_tile (stored N x K). */
template <int M, int N, int K, bool ATr, int BLd, bool BTr, int BS0, int BS1,
          int BS2, int BBs>
struct wgmma_tf32_register_a_shape {
  enum : bool {
    value = M == 16 && (N == 64 || N == 128 || N == 256) && K % 8 == 0 &&
            ATr && BTr && wgmma_row_tile<4, K, BLd, BS0, BS1, BS2, BBs>::value
  };
};

/* ... and A a K-major wgmma_tile in shared memory. */
template <class T, int M, int N, int K, int ALd, bool ATr, int AS0, int AS1,
          int AS2, int ABs, int BLd, bool BTr, int BS0, int BS1, int BS2,
          int BBs>
struct wgmma_shape {
  enum : bool {
    value = !ATr && wgmma_tile<T, K, ALd, AS0, AS1, AS2, ABs>::value &&
            wgmma_b_shape<T, M, N, K, BLd, BTr, BS0, BS1, BS2, BBs>::value
  };
};
/* A warpgroup product into acc, issued by product(registers): into acc's
 * own registers, or with ZeroAcc (acc is zero; the product starts from
 * zero and reads none) into fresh ones nobody zeroes. */
template <bool ZeroAcc, class F, class Product>
__device__ __forceinline__ F into_accumulator(F acc, Product product) {
  if constexpr (ZeroAcc) {
    F d;
    product(d.v);
    return d;
  } else {
    product(acc.v);
    return acc;
  }
}
} // namespace enigma_mma

/* acc + A * B, A an M x K tile and B a K x N tile in shared memory. Wg: the
 * four warps of each warpgroup multiply consecutive 16-row blocks of one
 * A tile by the same B (enigma.mma's `warpgroup`), which sm_90a runs as
 * one wgmma product when the tiles have its shapes. Async: that product
 * may still be in flight on return (enigma_mma_wait completes it).
 * ZeroAcc: acc is zero (the emitter knows), so the wgmma product starts
 * from zero itself and acc is not read on that path: nobody zeroes the
 * registers it writes. */
template <int K, int ALd, bool ATr, int AS0, int AS1, int AS2, int ABs,
          int BLd, bool BTr, int BS0, int BS1, int BS2, int BBs, bool Tf32,
          bool Wg, bool Async, bool ZeroAcc = false, class T, int M, int N>
__device__ __forceinline__ enigma_frag<float, M, N>
enigma_mma_sync(enigma_frag<float, M, N> acc, const T *a,
                enigma_mma::u64 a_base, enigma_mma::u64 a_off, const T *b,
                enigma_mma::u64 b_base, enigma_mma::u64 b_off, unsigned lane) {
  using namespace enigma_mma;
  typedef Tile<T, ALd, ATr, AS0, AS1, AS2, ABs> TA;
  typedef Tile<T, BLd, BTr, BS0, BS1, BS2, BBs> TB;
  const TA A{a, a_base, a_off};
  const TB B{b, b_base, b_off};
#if ENIGMA_HAS_WGMMA
  if constexpr (Wg && wgmma_shape<T, M, N, K, ALd, ATr, AS0, AS1, AS2, ABs,
                                  BLd, BTr, BS0, BS1, BS2, BBs>::value) {
    /* The warpgroup's A tile starts 16 rows per warp before this warp's. */
    const u64 slab = a_off - u64(16 * ALd) * ((threadIdx.x >> 5) & 3u);
    const unsigned a0 = smem(a) + unsigned(sizeof(T) * a_base);
    const unsigned b0 = smem(b) + unsigned(sizeof(T) * b_base);
    /* The swizzle pattern must start at 1024-byte boundaries (else
     * mma.sync below gives the same result). Threadgroups are whole
     * warpgroups: the runtime refuses other launches of such kernels. The
     * tiles of gemm_block are aligned at compile time, so only the wgmma
     * path remains and nothing else writes the accumulators while a
     * product is in flight. */
    if (((a0 | b0) & 1023u) == 0 && (slab % 512u) == 0 && (b_off % 512u) == 0) {
      return into_accumulator<ZeroAcc>(acc, [&](float *d) {
        enigma_wgmma::product<is_half<T>::value, N, K, !BTr, Async, ZeroAcc>(
            d, a0 + unsigned(sizeof(T) * slab), unsigned(sizeof(T) * ABs),
            b0 + unsigned(sizeof(T) * b_off), unsigned(sizeof(T) * BBs));
      });
    }
  }
  if constexpr (Wg && Tf32 && sizeof(T) == 4 &&
                wgmma_k_major_shape<4, M, N, K, ALd, ATr, AS0, AS1, AS2, ABs,
                                    BLd, BTr, BS0, BS1, BS2, BBs>::value) {
    /* As above, with 4-byte elements: 256 of them make 1024 bytes. */
    const u64 slab = a_off - u64(16 * ALd) * ((threadIdx.x >> 5) & 3u);
    const unsigned a0 = smem(a) + unsigned(4 * a_base);
    const unsigned b0 = smem(b) + unsigned(4 * b_base);
    if (((a0 | b0) & 1023u) == 0 && (slab % 256u) == 0 &&
        (b_off % 256u) == 0) {
      /* One instruction per 8 floats of K (32 bytes, as 16 halves). */
      return into_accumulator<ZeroAcc>(acc, [&](float *d) {
        enigma_wgmma::product_k_major<enigma_wgmma::tf32_tag,
                                      enigma_wgmma::tf32_tag, N, 2 * K,
                                      Async, ZeroAcc>(
            d, a0 + unsigned(4 * slab), unsigned(4 * ABs),
            b0 + unsigned(4 * b_off), unsigned(4 * BBs));
      });
    }
  }
  if constexpr (Wg && Tf32 && sizeof(T) == 4 &&
                wgmma_tf32_register_a_shape<M, N, K, ATr, BLd, BTr, BS0, BS1,
                                            BS2, BBs>::value) {
    /* A stored M-major: this warp's rows go through registers (the
     * m16n8k8 tf32 A fragment, element loads through the tile's swizzle),
     * B through its descriptor. The loads of the next K tile then run
     * while this product is in flight. */
    const unsigned b0 = smem(b) + unsigned(4 * b_base);
    if ((b0 & 1023u) == 0 && (b_off % 256u) == 0) {
      const int g = int(lane >> 2), t = int(lane & 3u);
      unsigned ar[K / 2];
#pragma unroll
      for (int kk = 0; kk < K / 8; ++kk) {
        const int k = 8 * kk + t;
        ar[4 * kk] = to_tf32(A(g, k));
        ar[4 * kk + 1] = to_tf32(A(g + 8, k));
        ar[4 * kk + 2] = to_tf32(A(g, k + 4));
        ar[4 * kk + 3] = to_tf32(A(g + 8, k + 4));
      }
      return into_accumulator<ZeroAcc>(acc, [&](float *d) {
        enigma_wgmma::product_rs_tf32<N, K, Async, ZeroAcc>(
            d, ar, b0 + unsigned(4 * b_off), unsigned(4 * BBs));
      });
    }
  }
  if constexpr (Wg && Async)
    enigma_wgmma::synchronous_product_begin();
#endif
  if constexpr (sizeof(T) == 2) {
    /* ldmatrix wants 16-byte rows: both starts a multiple of 8 elements. */
    const bool direct = ((a_base | a_off | b_base | b_off) & 7u) == 0;
    constexpr bool kHalf = is_half<T>::value;
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
      unsigned af[M / 16][4], bf[N / 16][4];
#pragma unroll
      for (int bi = 0; bi < M / 16; ++bi)
        load_a16(A, bi, kk, lane, direct, af[bi]);
#pragma unroll
      for (int jb = 0; jb < N / 16; ++jb)
        load_b16(B, jb, kk, lane, direct, bf[jb]);
#pragma unroll
      for (int bi = 0; bi < M / 16; ++bi)
#pragma unroll
        for (int bj = 0; bj < N / 8; ++bj)
          mma16816<kHalf>(&acc.v[4 * (bi * (N / 8) + bj)], af[bi],
                          &bf[bj >> 1][2 * (bj & 1)]);
    }
  } else if constexpr (Tf32) {
    const int g = int(lane >> 2), t = int(lane & 3u);
    const int q = int(lane >> 3), r8 = int(lane & 7u);
    /* ldmatrix on 32-bit data: 8 rows of 4 floats, starts 16-byte aligned */
    const bool aDirect = !ATr && ((a_base | a_off) & 3u) == 0;
    const bool bDirect = BTr && ((b_base | b_off) & 3u) == 0;
    const tf32_b_rows<TB, N> bCols(B, lane);
#pragma unroll
    for (int kk = 0; kk < K / 8; ++kk) {
      unsigned af[M / 16][4], bf[N / 8][2];
#pragma unroll
      for (int bi = 0; bi < M / 16; ++bi) {
        if (aDirect) {
          ldsm_x4(A.addr(16 * bi + 8 * (q & 1) + r8, 8 * kk + 4 * (q >> 1)),
                  af[bi][0], af[bi][1], af[bi][2], af[bi][3]);
#pragma unroll
          for (int j = 0; j < 4; ++j)
            af[bi][j] = to_tf32(as_float(af[bi][j]));
        } else {
          const int m = 16 * bi + g, k = 8 * kk + t;
          af[bi][0] = to_tf32(A(m, k));
          af[bi][1] = to_tf32(A(m + 8, k));
          af[bi][2] = to_tf32(A(m, k + 4));
          af[bi][3] = to_tf32(A(m + 8, k + 4));
        }
      }
#pragma unroll
      for (int jb = 0; jb < N / 16; ++jb) {
        if (bDirect) {
          ldsm_x4(B.addr(16 * jb + 8 * (q >> 1) + r8, 8 * kk + 4 * (q & 1)),
                  bf[2 * jb][0], bf[2 * jb][1], bf[2 * jb + 1][0],
                  bf[2 * jb + 1][1]);
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            bf[2 * jb][j] = to_tf32(as_float(bf[2 * jb][j]));
            bf[2 * jb + 1][j] = to_tf32(as_float(bf[2 * jb + 1][j]));
          }
        } else if (bCols.fast) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            bf[2 * jb + h][0] = to_tf32(bCols.at(kk, 0, 2 * jb + h));
            bf[2 * jb + h][1] = to_tf32(bCols.at(kk, 1, 2 * jb + h));
          }
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int n = 16 * jb + 8 * h + g, k = 8 * kk + t;
            bf[2 * jb + h][0] = to_tf32(B(k, n));
            bf[2 * jb + h][1] = to_tf32(B(k + 4, n));
          }
        }
      }
#pragma unroll
      for (int bi = 0; bi < M / 16; ++bi)
#pragma unroll
        for (int bj = 0; bj < N / 8; ++bj)
          mma1688_tf32(&acc.v[4 * (bi * (N / 8) + bj)], af[bi], bf[bj]);
    }
  } else {
    /* float4 reads of A rows need 4 contiguous, aligned k; float2 reads of
     * B column pairs 2 contiguous, aligned n (swizzles keep 16-byte
     * chunks, the pitches are multiples of 4). */
    const bool vec = !ATr && !BTr && ((a_base | a_off) & 3u) == 0 &&
                     ((b_base | b_off) & 1u) == 0;
    if (vec)
      mma_simt_vec<M, N, K>(acc.v, A, B, lane);
    else
      mma_simt<M, N, K>(acc.v, A, B, lane);
  }
#if ENIGMA_HAS_WGMMA
  if constexpr (Wg && Async)
    enigma_wgmma::synchronous_product_end();
#endif
  return acc;
}

namespace enigma_mma {
/* The mma.sync m16n8k16 A registers of K step kk, block row bi, of an
 * M x K fragment (its 16x8 blocks 2 kk and 2 kk + 1). */
template <class T, int M, int K>
__device__ __forceinline__ void a_registers(const enigma_frag<T, M, K> &a,
                                            int bi, int kk, unsigned *r) {
  const T *lo = &a.v[4 * (bi * (K / 8) + 2 * kk)];
  const T *hi = lo + 4;
  r[0] = pack2(lo[0], lo[1]);
  r[1] = pack2(lo[2], lo[3]);
  r[2] = pack2(hi[0], hi[1]);
  r[3] = pack2(hi[2], hi[3]);
}
} // namespace enigma_mma

/* acc + A * B with A an M x K fragment of half / bfloat and B as above.
 * Wg: the four warps of each warpgroup bring their own 16-row A and the
 * same B (enigma.mma_reg's `warpgroup`): one wgmma reading A from
 * registers on sm_90a when B has its shape. */
template <int BLd, bool BTr, int BS0, int BS1, int BS2, int BBs, bool Wg,
          bool Async, class T, int M, int N, int K>
__device__ __forceinline__ enigma_frag<float, M, N>
enigma_mma_reg(enigma_frag<float, M, N> acc, const enigma_frag<T, M, K> &a,
               const T *b, enigma_mma::u64 b_base, enigma_mma::u64 b_off,
               unsigned lane) {
  using namespace enigma_mma;
  typedef Tile<T, BLd, BTr, BS0, BS1, BS2, BBs> TB;
  const TB B{b, b_base, b_off};
  constexpr bool kHalf = is_half<T>::value;
#if ENIGMA_HAS_WGMMA
  if constexpr (Wg && wgmma_b_shape<T, M, N, K, BLd, BTr, BS0, BS1, BS2,
                                    BBs>::value) {
    const unsigned b0 = smem(b) + unsigned(sizeof(T) * b_base);
    /* The swizzle pattern must start at a 1024-byte boundary (else
     * mma.sync below gives the same result). */
    if ((b0 & 1023u) == 0 && (b_off % 512u) == 0) {
      unsigned ar[K / 4];
#pragma unroll
      for (int kk = 0; kk < K / 16; ++kk)
        a_registers(a, 0, kk, &ar[4 * kk]);
      enigma_wgmma::product_rs<kHalf, N, K, !BTr, Async>(
          acc.v, ar, b0 + unsigned(sizeof(T) * b_off),
          unsigned(sizeof(T) * BBs));
      return acc;
    }
  }
  if constexpr (Async)
    enigma_wgmma::synchronous_product_begin();
#endif
  const bool direct = ((b_base | b_off) & 7u) == 0;
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    unsigned bf[N / 16][4];
#pragma unroll
    for (int jb = 0; jb < N / 16; ++jb)
      load_b16(B, jb, kk, lane, direct, bf[jb]);
#pragma unroll
    for (int bi = 0; bi < M / 16; ++bi) {
      unsigned ar[4];
      a_registers(a, bi, kk, ar);
#pragma unroll
      for (int bj = 0; bj < N / 8; ++bj)
        mma16816<kHalf>(&acc.v[4 * (bi * (N / 8) + bj)], ar,
                        &bf[bj >> 1][2 * (bj & 1)]);
    }
  }
#if ENIGMA_HAS_WGMMA
  if constexpr (Async)
    enigma_wgmma::synchronous_product_end();
#endif
  return acc;
}

/*===--- Simdgroup 8x8 half matrices on the tensor cores ---------------------===*/

namespace enigma_mma {
/* d = a * b + c for 8x8 half tiles, each lane holding the pair of its row
 * l / 4 at columns 2 (l % 4), + 1 (enigma_cuda_simdgroup_matrix.cuh): A's
 * pair is a0/a1 of an m16n8k8 A fragment (rows 8-15 zero) and C's pair
 * c0/c1; B's pairs become the B fragment (column l / 4) by a transpose.
 * Products and sums in float, rounded once to half. */
template <class H>
__device__ __forceinline__ void half_mma88(H ax, H ay, H bx, H by, H cx,
                                           H cy, H &dx, H &dy) {
  const unsigned a[2] = {pack2(ax, ay), 0u};
  const unsigned b = movmatrix_trans(pack2(bx, by));
  float d[4] = {float(cx), float(cy), 0.0f, 0.0f};
  mma1688_f16(d, a, b);
  dx = H(d[0]);
  dy = H(d[1]);
}
} // namespace enigma_mma

#if ENIGMA_USE_HALF && !defined(ENIGMA_MMA_EMULATION)
template <>
__device__ inline half2 enigma_simdgroup_multiply_accumulate<half2>(
    const half2 &a, const half2 &b, const half2 &c) {
  half2 r;
  enigma_mma::half_mma88(a.x, a.y, b.x, b.y, c.x, c.y, r.x, r.y);
  return r;
}
#endif

#endif /* ENIGMA_CUDA_MMA_PRODUCTS_CUH */
