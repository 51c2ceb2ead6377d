/*===- enigma_cuda_tma.cuh - Tile copies by the Tensor Memory Accelerator -*- CUDA -*-===*
 *
 * On sm_90 a tile copy (enigma.copy_tile_async) whose source has a tensor
 * map (docs/design/tma.md; the runtime encodes one per buffer, pitch, box
 * and swizzle and passes it as a __grid_constant__ parameter) is one
 * cp.async.bulk.tensor instruction issued by thread 0, instead of 16-byte
 * cp.async chunks and their address arithmetic in every thread. The first
 * warp decides: a whole tile inside its row pitch, on a boundary the
 * map's swizzle allows, goes to the TMA; any other tile that warp copies
 * alone with cp.async. The other warps do nothing for the copy.
 * The TMA addresses a tile by row and column: the compiler passes them
 * where the offset is written as row * pitch + column (the GEMM tiles);
 * otherwise the first warp divides.
 *
 * Completion: each commit group has an mbarrier (16, reused in turn; a
 * group is waited for long before its barrier comes round again, since
 * copy_wait allows at most 7 open groups and a threadgroup barrier follows
 * it). Thread 0 adds each copy's bytes to the group's expected count
 * before issuing it and arrives once at the commit; copy_wait waits for
 * cp.async groups (the first warp's fallback copies) and then for the
 * barriers of the groups it closes, in every thread.
 *
 * Without sm_90 (or with an invalid map: the runtime could not encode it)
 * the calls are the plain cp.async copies.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_TMA_CUH
#define ENIGMA_CUDA_TMA_CUH

/* CUtensorMap's size and alignment, opaque. */
struct __align__(64) EnigmaTensorMap {
  unsigned long long bits[16];
};

/* This thread's view of the commit groups (the same in every thread). */
struct EnigmaTmaGroups {
  unsigned bars;      /* shared address of the 16 mbarriers */
  unsigned committed; /* groups committed */
  unsigned waited;    /* groups waited for */
};

namespace enigma_tma {
enum : unsigned { kBarriers = 16 };

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define ENIGMA_HAS_TMA 1

__device__ __forceinline__ unsigned barrier_of(const EnigmaTmaGroups &g,
                                               unsigned group) {
  return g.bars + 8u * (group % kBarriers);
}

__device__ __forceinline__ void expect_bytes(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n"
               ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void arrive(unsigned bar) {
  unsigned long long state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n"
               : "=l"(state) : "r"(bar) : "memory");
  (void)state;
}

__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

/* Rows x Cols elements at column c, row r of the map's tensor into shared
 * memory at dst, completing on bar. */
__device__ __forceinline__ void load_box(unsigned dst,
                                         const EnigmaTensorMap &map, int c,
                                         int r, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
               ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(&map)),
               "r"(c), "r"(r), "r"(bar) : "memory");
}
#endif
} // namespace enigma_tma

/* At kernel entry (every thread): thread 0 sets up the barriers. */
__device__ __forceinline__ EnigmaTmaGroups enigma_tma_begin(unsigned tid) {
  EnigmaTmaGroups g = {0u, 0u, 0u};
#ifdef ENIGMA_HAS_TMA
  __shared__ __align__(8) unsigned long long bars[enigma_tma::kBarriers];
  g.bars = enigma_mma::smem(bars);
  if (tid == 0) {
    for (unsigned i = 0; i < enigma_tma::kBarriers; ++i)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n"
                   ::"r"(g.bars + 8u * i) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  __syncthreads();
#else
  (void)tid;
#endif
  return g;
}

namespace enigma_tma {
/* The TMA copy of enigma_copy_tile_tma when the first warp finds it
 * possible: the tile at row `row`, column `col` of the map's rows is whole
 * (inside its valid rows and columns and its row of the pitch, which the
 * map's rows end at) and lands on a boundary the map's swizzle allows. One
 * box of Rows x BoxCols per column block (Bs > 0: blocks of BoxCols, Bs
 * elements apart; else one box of the whole tile). */
template <int Rows, int Cols, int BoxCols, int Bs, int S0, class T>
__device__ __forceinline__ bool
copy_box(EnigmaTmaGroups &g, const EnigmaTensorMap &map, unsigned at,
         enigma_mma::u64 src_off, enigma_mma::u64 src_ld,
         enigma_mma::u64 valid_rows, enigma_mma::u64 valid_cols,
         enigma_mma::u64 row, enigma_mma::u64 col, unsigned tid) {
  using enigma_mma::u64;
  constexpr unsigned Align = S0 == 0 ? 128u : 1024u;
  constexpr u64 Limit = (u64(1) << 31) - 256u; /* signed coordinates */
  static_assert(Bs == 0 || (Bs * sizeof(T)) % Align == 0,
                "blocks must start where the map's swizzle allows");
  if (valid_rows < u64(Rows) || valid_cols < u64(Cols) ||
      (at & (Align - 1u)) != 0 || row * src_ld + col != src_off ||
      col + u64(Cols) > src_ld || row >= Limit)
    return false;
#ifdef ENIGMA_HAS_TMA
  if (tid == 0) {
    const unsigned bar = barrier_of(g, g.committed);
    expect_bytes(bar, unsigned(Rows * Cols * sizeof(T)));
#pragma unroll
    for (int j = 0; j < Cols / BoxCols; ++j)
      load_box(at + unsigned(j * Bs * sizeof(T)), map, int(col) + j * BoxCols,
               int(row), bar);
  }
#endif
  return true;
}
} // namespace enigma_tma

/* enigma_copy_tile_async with the source's tensor map (valid: the runtime
 * encoded it), the tile at row `row`, column `col` of the source's rows of
 * src_ld elements: the compiler finds them in src_off = row * src_ld + col
 * where it can, and the copy checks that they are. Swizzled: the map has
 * the 128-byte swizzle, which is Swizzle<3, 4 - log2(sizeof(T)), 3> of a
 * tile anchored at 1024 bytes. */
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs,
          class T>
__device__ __forceinline__ void
enigma_copy_tile_tma(EnigmaTmaGroups &g, const EnigmaTensorMap &map,
                     unsigned valid, T *dst, enigma_mma::u64 dst_base,
                     const T *src, enigma_mma::u64 src_off,
                     enigma_mma::u64 src_ld, enigma_mma::u64 valid_rows,
                     enigma_mma::u64 valid_cols, unsigned tid,
                     unsigned nthreads, enigma_mma::u64 row,
                     enigma_mma::u64 col) {
#ifdef ENIGMA_HAS_TMA
  if (valid) {
    if (tid >= 32u)
      return;
    const unsigned at =
        enigma_mma::smem(dst) + unsigned(dst_base * sizeof(T));
    if (enigma_tma::copy_box<Rows, Cols, (Bs > 0 ? DstLd : Cols), Bs, S0, T>(
            g, map, at, src_off, src_ld, valid_rows, valid_cols, row, col,
            tid))
      return;
    nthreads = 32u; /* the first warp copies this tile alone */
  }
#else
  (void)g, (void)map, (void)valid, (void)row, (void)col;
#endif
  enigma_copy_tile_async<Rows, Cols, DstLd, S0, S1, S2, Bs>(
      dst, dst_base, src, src_off, src_ld, valid_rows, valid_cols, tid,
      nthreads);
}

/* The same where the compiler could not split src_off: the first warp
 * divides (32-bit where the operands allow). */
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs,
          class T>
__device__ __forceinline__ void
enigma_copy_tile_tma(EnigmaTmaGroups &g, const EnigmaTensorMap &map,
                     unsigned valid, T *dst, enigma_mma::u64 dst_base,
                     const T *src, enigma_mma::u64 src_off,
                     enigma_mma::u64 src_ld, enigma_mma::u64 valid_rows,
                     enigma_mma::u64 valid_cols, unsigned tid,
                     unsigned nthreads) {
  using enigma_mma::u64;
  u64 row = 0, col = src_off;
  if (valid && tid < 32u && src_ld > 0) {
    row = (src_off >> 32) == 0 && (src_ld >> 32) == 0
              ? u64(unsigned(src_off) / unsigned(src_ld))
              : src_off / src_ld;
    col = src_off - row * src_ld;
  }
  enigma_copy_tile_tma<Rows, Cols, DstLd, S0, S1, S2, Bs>(
      g, map, valid, dst, dst_base, src, src_off, src_ld, valid_rows,
      valid_cols, tid, nthreads, row, col);
}

/* Closes the group: cp.async's, and thread 0 arrives on its barrier. */
__device__ __forceinline__ void enigma_tma_commit(EnigmaTmaGroups &g,
                                                  unsigned tid) {
  enigma_copy_async_commit();
#ifdef ENIGMA_HAS_TMA
  if (tid == 0)
    enigma_tma::arrive(enigma_tma::barrier_of(g, g.committed));
#else
  (void)tid;
#endif
  ++g.committed;
}

/* Waits until at most Pending groups are open: cp.async's, then the
 * barriers of the groups it closes. */
template <int Pending>
__device__ __forceinline__ void enigma_tma_wait(EnigmaTmaGroups &g) {
  enigma_copy_async_wait<Pending>();
#ifdef ENIGMA_HAS_TMA
  for (; g.waited + unsigned(Pending) < g.committed; ++g.waited)
    enigma_tma::wait_parity(enigma_tma::barrier_of(g, g.waited),
                            (g.waited / enigma_tma::kBarriers) & 1u);
#endif
}

#endif /* ENIGMA_CUDA_TMA_CUH */
