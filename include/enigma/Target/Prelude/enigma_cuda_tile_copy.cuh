/*===- enigma_cuda_tile_copy.cuh - Tile copies into stages -*- CUDA -*-===*
 *
 * The copies of gemm_block's and the pipelines' operand tiles into
 * threadgroup memory: cp.async of 16-byte chunks with zero fill at the
 * edges, whole tiles block by block under their swizzle, and the commit /
 * wait of those copies. Included by enigma_cuda_mma.cuh (the swizzle and
 * Tile helpers come from it).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_TILE_COPY_CUH
#define ENIGMA_CUDA_TILE_COPY_CUH

/*===--- Tile copies -------------------------------------------------------------===*/

namespace enigma_mma {
/* Elements after which a swizzle repeats: adding a multiple keeps it. */
template <int B, int Base, int S> struct swizzle_period {
  enum : long long {
    value = B == 0 ? 1 : 1LL << (Base + (S < 0 ? -S : S) + B)
  };
};

/* A whole tile (no edge inside) copied by exactly Threads threads, block
 * by block (Bs > 0: column blocks of DstLd; else one block of Cols), so
 * that a warp writes whole rows of one block, which the swizzle spreads
 * over the banks. Each thread keeps one column and its chunks are RowStep
 * rows apart, so the source address moves by constant strides and, when
 * RowStep rows span whole swizzle periods, the destination by constants:
 * one cp.async and an add per chunk. */
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs,
          int Threads, class T>
struct whole_tile {
  enum : int {
    E = 16 / int(sizeof(T)),
    BlockCols = Bs > 0 ? DstLd : Cols,
    Blocks = Cols / BlockCols,
    PerRow = BlockCols / E,
    RowStep = PerRow <= Threads ? Threads / PerRow : 1,
    Steps = (Rows + RowStep - 1) / RowStep, /* per block */
    /* Every thread has a column; with several blocks, each block's
     * chunks are a whole number of steps of all threads. */
    Fits = Threads % PerRow == 0 &&
           (Blocks == 1 || (Rows * PerRow) % Threads == 0),
  };
  static __device__ __forceinline__ void copy(T *dst, u64 dst_base,
                                              const T *src, u64 src_off,
                                              u64 src_ld, unsigned tid) {
    constexpr bool Periodic =
        (long long)RowStep * DstLd % swizzle_period<S0, S1, S2>::value == 0;
    const unsigned r0 = tid / PerRow, c = (tid % PerRow) * E;
    const T *from = src + src_off + u64(r0) * src_ld + c;
    const u64 stride = u64(RowStep) * src_ld;
    const unsigned base = smem(dst) + unsigned(sizeof(T) * dst_base);
    const unsigned first =
        unsigned(sizeof(T) * swz<S0, S1, S2>(u64(r0) * DstLd + c));
#pragma unroll
    for (int b = 0; b < Blocks; ++b) {
#pragma unroll
      for (int j = 0; j < Steps; ++j) {
        const unsigned r = r0 + unsigned(j * RowStep);
        if (Rows % RowStep != 0 && r >= unsigned(Rows))
          break;
        const unsigned at =
            unsigned(sizeof(T) * b * Bs) +
            (Periodic
                 ? first + unsigned(sizeof(T) * j * RowStep * DstLd)
                 : unsigned(sizeof(T) * swz<S0, S1, S2>(u64(r) * DstLd + c)));
        cp_async16(base + at, from + b * BlockCols + j * stride, 16u);
      }
    }
  }
};

/* A dense tile with edges, or copied by a thread count without an
 * unrolled path: cp.async per chunk when aligned (the zero fill of a chunk
 * crossing the edge is cp.async's src-size), element copies otherwise. */
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, class T>
__device__ __forceinline__ void
copy_tile_edges(bool aligned, T *dst, u64 dst_base, const T *src,
                u64 src_off, u64 src_ld, u64 valid_rows, u64 valid_cols,
                unsigned tid, unsigned nthreads) {
  constexpr int E = 16 / int(sizeof(T)); /* elements per chunk */
  constexpr int PerRow = Cols / E;
  constexpr int Chunks = Rows * PerRow;
  if (aligned) {
    const unsigned base = smem(dst);
    for (unsigned i = tid; i < unsigned(Chunks); i += nthreads) {
      const u64 r = i / PerRow, c = u64(i % PerRow) * E;
      const u64 at = dst_base + swz<S0, S1, S2>(r * DstLd + c);
      unsigned bytes = 0;
      const T *from = src;
      if (r < valid_rows && c < valid_cols) {
        const u64 n = valid_cols - c;
        bytes = unsigned((n < u64(E) ? n : u64(E)) * sizeof(T));
        from = src + src_off + r * src_ld + c;
      }
      cp_async16(base + unsigned(at * sizeof(T)), from, bytes);
    }
    return;
  }
  for (unsigned i = tid; i < unsigned(Chunks); i += nthreads) {
    const u64 r = i / PerRow, c0 = u64(i % PerRow) * E;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const u64 c = c0 + e;
      const bool in = r < valid_rows && c < valid_cols;
      dst[dst_base + swz<S0, S1, S2>(r * DstLd + c)] =
          in ? src[src_off + r * src_ld + c] : T(0.0f);
    }
  }
}

/* The unrolled copy when the threadgroup has exactly Threads threads and
 * the tile suits them; false otherwise. */
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs,
          int Threads, class T>
__device__ __forceinline__ bool
copy_whole_tile_by(unsigned nthreads, T *dst, u64 dst_base, const T *src,
                   u64 src_off, u64 src_ld, unsigned tid) {
  typedef whole_tile<Rows, Cols, DstLd, S0, S1, S2, Bs, Threads, T> Tile;
  if constexpr (bool(Tile::Fits)) {
    if (nthreads == unsigned(Threads)) {
      Tile::copy(dst, dst_base, src, src_off, src_ld, tid);
      return true;
    }
  }
  return false;
}
} // namespace enigma_mma

/* The threadgroup copies a Rows x Cols tile in 16-byte chunks:
 * dst[dst_base + swizzle(r * DstLd + c)] = src[src_off + r * src_ld + c]
 * inside valid_rows x valid_cols, 0 outside; Bs > 0 stores column blocks
 * of DstLd, block b from dst_base + b * Bs on, each swizzled inside
 * itself (c then counts from the block's first column). cp.async when
 * the source rows are 16-byte aligned, element copies otherwise (also
 * when dst_base is not a whole chunk). Whole tiles copied by 128, 256 or
 * 512 threads (the GEMM shapes) take the unrolled path; a constant
 * nthreads (a kernel with a required threadgroup size) keeps only its
 * own. */
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs = 0,
          class T>
__device__ __forceinline__ void
enigma_copy_tile_async(T *dst, enigma_mma::u64 dst_base, const T *src,
                       enigma_mma::u64 src_off, enigma_mma::u64 src_ld,
                       enigma_mma::u64 valid_rows, enigma_mma::u64 valid_cols,
                       unsigned tid, unsigned nthreads) {
  using namespace enigma_mma;
  const bool aligned = ((((u64)(size_t)(src + src_off)) |
                         (src_ld * sizeof(T)) | (dst_base * sizeof(T)) |
                         (u64(Bs) * sizeof(T))) &
                        15u) == 0;
  if (aligned && valid_rows >= u64(Rows) && valid_cols >= u64(Cols) &&
      (copy_whole_tile_by<Rows, Cols, DstLd, S0, S1, S2, Bs, 512>(
           nthreads, dst, dst_base, src, src_off, src_ld, tid) ||
       copy_whole_tile_by<Rows, Cols, DstLd, S0, S1, S2, Bs, 256>(
           nthreads, dst, dst_base, src, src_off, src_ld, tid) ||
       copy_whole_tile_by<Rows, Cols, DstLd, S0, S1, S2, Bs, 128>(
           nthreads, dst, dst_base, src, src_off, src_ld, tid)))
    return;
  /* Column blocks one by one, each a dense tile: fewer registers in the
   * loops around the copy than one pass over all blocks (a GEMM's
   * accumulators take most of them; short of registers, ptxas serialises
   * the warpgroup products). */
  if constexpr (Bs > 0) {
#pragma unroll 1
    for (int b = 0; b < Cols / DstLd; ++b) {
      const u64 done = u64(b) * DstLd;
      copy_tile_edges<Rows, DstLd, DstLd, S0, S1, S2>(
          aligned, dst, dst_base + u64(b) * u64(Bs), src, src_off + done,
          src_ld, valid_rows, valid_cols > done ? valid_cols - done : 0,
          tid, nthreads);
    }
  } else {
    copy_tile_edges<Rows, Cols, DstLd, S0, S1, S2>(
        aligned, dst, dst_base, src, src_off, src_ld, valid_rows,
        valid_cols, tid, nthreads);
  }
}

__device__ __forceinline__ void enigma_copy_async_commit() {
  enigma_mma::cp_async_commit();
}

template <int Pending> __device__ __forceinline__ void enigma_copy_async_wait() {
  enigma_mma::cp_async_wait<Pending>();
}

#endif /* ENIGMA_CUDA_TILE_COPY_CUH */
