/*===- enigma_cuda_pipeline.cuh - Pipelines with roles on sm_90 -*- CUDA -*-===*
 *
 * The explicit form of enigma.pipeline (docs/design/warp-specialization.md):
 * a ring of `S` stages in shared memory guarded by S "full" and S "empty"
 * mbarriers. One warp of a producer warpgroup (the threads after the
 * threadgroup's own) acquires a free stage (waits on its empty barrier),
 * copies tiles into it with the Tensor Memory Accelerator and commits the
 * bytes the stage expects (arrive.expect_tx on its full barrier); the
 * consumer warps wait on the full barrier, compute, and release the stage
 * (each warp arrives on the empty barrier, with a cluster on that barrier
 * in every threadgroup of the cluster, since a multicast copy writes all
 * of them).
 *
 * Phases: the n-th use of a slot (n = uses / S) completes phase n of its
 * barriers; a waiter asks for the parity of that phase. The producer's
 * first pass waits on parity 1 of empty barriers that have not completed
 * a phase yet, which succeeds at once (the stages start free).
 *
 * Where the runtime could not encode a tensor map for one of the ring's
 * copies (an unaligned buffer or pitch; docs/design/tma.md) the ring runs
 * without the TMA: the producer warp's 32 lanes copy each stage with
 * cp.async, wait for their copies, fence them for the async proxy (wgmma
 * reads through it) and arrive without transaction bytes.
 *
 * In bounds-checked mode a wait gives up after about two seconds and
 * records which barrier, role, stage and phase it waited for (the bounds
 * record, enigma/Support/BoundsRecord.h); every later checked wait then
 * returns at once, so a wrong pipeline is reported instead of hanging.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_PIPELINE_CUH
#define ENIGMA_CUDA_PIPELINE_CUH

/* One ring's state in the thread that runs a role (each thread runs one). */
template <int S> struct EnigmaRing {
  unsigned bars;     /* shared address of full[0..S), then empty[0..S) */
  unsigned next;     /* producer: stages acquired; consumers: stages waited */
  unsigned released; /* consumers: stages released */
  unsigned tma;      /* every copy of the ring goes through the TMA */
};

/* Where a ring wait reports in bounds-checked mode. */
struct EnigmaRingCheck {
  unsigned *record; /* the bounds record (8 words) */
  unsigned site;    /* the wait's site in the kernel's table */
};

/* How long a checked wait spins before it reports (bounds-checked mode). */
#ifndef ENIGMA_RING_TIMEOUT_NS
#define ENIGMA_RING_TIMEOUT_NS 2000000000ull
#endif

namespace enigma_ring {

/* The primitives below are all the PTX of this file. A host test
 * (unittests/Cuda/RingEmulationTest.cpp) defines ENIGMA_RING_EMULATION
 * and its own emulated mbarriers, TMA and cluster instead, and runs the
 * functions after them on threads. */
#if defined(ENIGMA_RING_EMULATION)
#define ENIGMA_HAS_RINGS 1
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(ENIGMA_MMA_EMULATION)
#define ENIGMA_HAS_RINGS 1

__device__ __forceinline__ void init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar),
               "r"(count)
               : "memory");
}

__device__ __forceinline__ bool try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n .reg .pred p;\n"
               " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               " selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
  return done != 0;
}

__device__ __forceinline__ void arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(
                   bar)
               : "memory");
}

__device__ __forceinline__ void arrive_expect_tx(unsigned bar,
                                                 unsigned bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::
          "r"(bar),
      "r"(bytes)
      : "memory");
}

/* Arrives on the barrier at the same shared offset in cluster block
 * `rank`. */
__device__ __forceinline__ void arrive_in(unsigned bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(bar), "r"(rank));
  /* Release at the default (CTA) scope, as the consumers' reads it orders
   * are of their own block; .cluster scope costs a MEMBAR.ALL.GPU. */
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote)
               : "memory");
}

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n"
               "barrier.cluster.wait.acquire;\n" ::
                   : "memory");
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

/* After a lane's cp.async copies: complete them and make them visible to
 * the async proxy (wgmma reads through it). */
__device__ __forceinline__ void copies_done() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* The bounds record's claim (fetch_or, the old value) and count. */
__device__ __forceinline__ unsigned claim(unsigned *word) {
  unsigned old;
  asm volatile("atom.or.b32 %0, [%1], 1;\n" : "=r"(old) : "l"(word) : "memory");
  return old;
}
__device__ __forceinline__ void count(unsigned *word) {
  asm volatile("red.add.u32 [%0], 1;\n" ::"l"(word) : "memory");
}

__device__ __forceinline__ void init_done() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* Box `{c, r}` of the map into shared memory at dst, completing on bar;
 * Mask != 0: delivered to the cluster blocks in the mask, at the same
 * offsets, each completing its own barrier. */
__device__ __forceinline__ void load_box(unsigned dst, const void *map, int c,
                                         int r, unsigned bar,
                                         unsigned short mask) {
  if (mask == 0)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
        ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
            dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c), "r"(r),
        "r"(bar)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
        ".mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c), "r"(r),
        "r"(bar), "h"(mask)
        : "memory");
}
#endif

/* Waits until phase `parity` of `bar` completed. With `check`, gives up
 * after about two seconds: the first thread to give up records the site,
 * the stage and the phase (`stage`, `use`: the word pair of the record's
 * index) and its position; from then on every checked wait of the launch
 * returns at once, so the kernel ends (with wrong data, which the runtime
 * does not return) instead of hanging. */
__device__ __forceinline__ void wait(unsigned bar, unsigned parity,
                                     const EnigmaRingCheck *check,
                                     unsigned stage, unsigned use) {
#ifdef ENIGMA_HAS_RINGS
  if (try_wait(bar, parity))
    return;
  if (!check) {
    while (!try_wait(bar, parity)) {
    }
    return;
  }
  volatile unsigned *record = check->record;
  const unsigned long long start = now_ns();
  while (!try_wait(bar, parity)) {
    if (record[0] != 0u)
      return; /* another wait gave up: the launch is reported already */
    if (now_ns() - start > ENIGMA_RING_TIMEOUT_NS) {
      if (claim(check->record) == 0u) {
        record[1] = check->site + 1u;
        record[2] = stage;
        record[3] = use;
        record[4] = threadIdx.x;
        record[5] = blockIdx.x;
        record[6] = 0u;
      }
      count(check->record + 7);
      __threadfence_system();
      return;
    }
  }
#else
  (void)bar, (void)parity, (void)check, (void)stage, (void)use;
#endif
}

} // namespace enigma_ring

/* At kernel entry, every thread (the producer warpgroup too): thread 0
 * initialises the barriers (a full barrier waits for the producer's
 * `full_arrivals`: one, or each of its 128 threads in a ring with a
 * transposing copy; an empty one for each consumer warp of the cluster), then all
 * meet so that no thread uses a barrier before it exists. `tma`: the
 * runtime encoded every tensor map of the ring and its buffers are
 * aligned for the TMA. */
template <int S, int Cluster>
__device__ __forceinline__ EnigmaRing<S>
enigma_ring_begin(unsigned long long *bars, unsigned consumer_warps,
                  unsigned tid, bool tma, unsigned full_arrivals = 1u) {
  EnigmaRing<S> ring = {enigma_mma::smem(bars), 0u, 0u, tma ? 1u : 0u};
#ifdef ENIGMA_HAS_RINGS
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      enigma_ring::init(ring.bars + 8u * unsigned(s), full_arrivals);
      enigma_ring::init(ring.bars + 8u * unsigned(S + s),
                        consumer_warps * unsigned(Cluster));
    }
    enigma_ring::init_done();
  }
  if (Cluster > 1)
    enigma_ring::cluster_sync();
  else
    __syncthreads();
#else
  (void)consumer_warps, (void)tid;
#endif
  return ring;
}

/* Whether a ring buffer starts where its TMA copies need it to. */
__device__ __forceinline__ bool enigma_ring_aligned(const void *buffer,
                                                    unsigned alignment) {
  return (enigma_mma::smem(buffer) & (alignment - 1u)) == 0u;
}

/* Producer: the next slot, once every consumer released its last use. */
template <int S>
__device__ __forceinline__ unsigned
enigma_ring_acquire(EnigmaRing<S> &ring,
                    const EnigmaRingCheck *check = nullptr) {
  const unsigned slot = ring.next % unsigned(S), use = ring.next / unsigned(S);
  enigma_ring::wait(ring.bars + 8u * (unsigned(S) + slot), (use & 1u) ^ 1u,
                    check, slot, use);
  return slot;
}

/* Producer, one thread: the box of enigma_stage_copy below through the
 * TMA (one box per column block; Multicast: this block's share of the
 * rows, delivered to every block of the cluster). The CUDA text calls it
 * directly in the producer's TMA form, where its first thread alone runs
 * the producer (a handful of instructions per stage: a single warp's
 * issue rate bounds small blocks' K steps, docs/design/warp-specialization.md). */
template <int BoxRows, int BoxCols, int Bc, int Bs, bool Multicast,
          int Cluster, int S, class T>
__device__ __forceinline__ void
enigma_stage_copy_tma(EnigmaRing<S> &ring, unsigned slot, const void *map,
                      T *dst, enigma_mma::u64 dst_base, enigma_mma::u64 row,
                      enigma_mma::u64 col) {
  using enigma_mma::u64;
#ifdef ENIGMA_HAS_RINGS
  constexpr int Share = Multicast ? BoxRows / Cluster : BoxRows;
  const unsigned rank = Multicast ? enigma_ring::cluster_rank() : 0u;
  const unsigned bar = ring.bars + 8u * slot;
  const unsigned at = enigma_mma::smem(dst) +
                      unsigned(sizeof(T) * (dst_base + u64(rank) * Share * Bc));
  const unsigned short mask =
      Multicast ? (unsigned short)((1u << Cluster) - 1u) : 0;
#pragma unroll
  for (int j = 0; j < BoxCols / Bc; ++j)
    enigma_ring::load_box(at + unsigned(sizeof(T) * j * Bs), map,
                          int(col) + j * Bc, int(row + rank * Share), bar,
                          mask);
#else
  (void)ring, (void)slot, (void)map, (void)dst, (void)dst_base, (void)row,
      (void)col;
#endif
}

/* Producer: a box of rows x cols matrix `src` (pitch ld) at (row, col)
 * into the stage: element (r, c) at dst + dst_base + (c / Bc) * Bs +
 * swizzle(r * Bc + c % Bc); outside the matrix zeros. Through the TMA
 * (lane 0: enigma_stage_copy_tma), else by the warp with cp.async. */
template <int BoxRows, int BoxCols, int Bc, int Bs, int S0, int S1, int S2,
          bool Multicast, int Cluster, int S, class T>
__device__ __forceinline__ void
enigma_stage_copy(EnigmaRing<S> &ring, unsigned slot, const void *map,
                  T *dst, enigma_mma::u64 dst_base, const T *src,
                  enigma_mma::u64 row, enigma_mma::u64 col,
                  enigma_mma::u64 rows, enigma_mma::u64 cols,
                  enigma_mma::u64 ld, unsigned lane) {
  using enigma_mma::u64;
#ifdef ENIGMA_HAS_RINGS
  if (ring.tma && map) {
    if (lane == 0)
      enigma_stage_copy_tma<BoxRows, BoxCols, Bc, Bs, Multicast, Cluster>(
          ring, slot, map, dst, dst_base, row, col);
    return;
  }
#else
  (void)ring, (void)slot, (void)map;
#endif
  const u64 valid_rows = row < rows ? rows - row : 0;
  const u64 valid_cols = col < cols ? cols - col : 0;
  enigma_copy_tile_async<BoxRows, BoxCols, Bc, S0, S1, S2,
                         (Bc < BoxCols ? Bs : 0)>(
      dst, dst_base, src, row * ld + col, ld, valid_rows, valid_cols, lane,
      32u);
}

/* Producer, one thread (the TMA form): the stage's copies are issued; the
 * full barrier completes once `bytes` have landed. */
template <int S>
__device__ __forceinline__ void
enigma_ring_commit_tma(EnigmaRing<S> &ring, unsigned slot, unsigned bytes) {
#ifdef ENIGMA_HAS_RINGS
  enigma_ring::arrive_expect_tx(ring.bars + 8u * slot, bytes);
#else
  (void)slot, (void)bytes;
#endif
  ++ring.next;
}

/* Producer: the stage's copies are issued; the full barrier completes once
 * `bytes` have landed (TMA), or now (the warp's cp.async copies, waited
 * for and fenced for the async proxy first). */
template <int S>
__device__ __forceinline__ void enigma_ring_commit(EnigmaRing<S> &ring,
                                                   unsigned slot,
                                                   unsigned bytes,
                                                   unsigned lane) {
#ifdef ENIGMA_HAS_RINGS
  const unsigned bar = ring.bars + 8u * slot;
  if (ring.tma) {
    if (lane == 0)
      enigma_ring::arrive_expect_tx(bar, bytes);
  } else {
    enigma_ring::copies_done();
    __syncwarp();
    if (lane == 0)
      enigma_ring::arrive(bar);
  }
#else
  (void)slot, (void)bytes, (void)lane;
#endif
  ++ring.next;
}

#if !defined(ENIGMA_RING_EMULATION)
namespace enigma_ring {
/* 16 bytes of global memory (aligned) into registers. */
__device__ __forceinline__ void load16(const void *p, unsigned (&v)[4]) {
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "l"(__cvta_generic_to_global(p)));
}
__device__ __forceinline__ void store16(unsigned at, unsigned a, unsigned b,
                                        unsigned c, unsigned d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(at),
               "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}
} // namespace enigma_ring

/* Producer warpgroup (all 128 threads, `ptid` 0 to 127): the box of
 * BoxRows x BoxCols 32-bit elements at (row, col) of the rows x cols
 * matrix `src` (pitch ld) transposed into the stage: box element (r, c)
 * at dst + dst_base + (r / Bc) * Bs + swizzle(c * Bc + r % Bc), zeros
 * outside the matrix. The TMA cannot transpose, so the threads do: each
 * takes 4 x 4 blocks (4 rows of the box, 4 columns), loads them with
 * 16-byte loads (element loads at the matrix's edges or from unaligned
 * rows), and stores the block's 4 columns as 4 16-byte chunks of the
 * stage's rows. Blocks go to threads K first: the 8 threads of one
 * store phase (a quarter warp) hold the 8 chunks of one stored row of a
 * 32-element Bc, which the 128-byte swizzle puts in 8 different bank
 * groups (no conflict), and each load reads 64 contiguous bytes of 8
 * rows. MaxBatch blocks (16 registers each) are in flight at once, as
 * the producer's registers allow (CudaPipelines.cpp). The
 * stores are generic-proxy writes: enigma_ring_commit_transposed fences
 * them for the async proxy (wgmma) before arriving. */
template <int BoxRows, int BoxCols, int Bc, int Bs, int S0, int S1, int S2,
          int MaxBatch, class T>
__device__ __forceinline__ void
enigma_stage_copy_transposed(T *dst, enigma_mma::u64 dst_base, const T *src,
                             enigma_mma::u64 row, enigma_mma::u64 col,
                             enigma_mma::u64 rows, enigma_mma::u64 cols,
                             enigma_mma::u64 ld, unsigned ptid) {
  using enigma_mma::u64;
  static_assert(sizeof(T) == 4, "transposing stage copies move 32-bit data");
  static_assert(BoxRows % 4 == 0 && BoxCols % 4 == 0 && Bc % 4 == 0,
                "transposing stage copies move 4 x 4 blocks");
  constexpr int KBlocks = BoxRows / 4, Blocks = KBlocks * (BoxCols / 4);
  constexpr int PerThread = (Blocks + 127) / 128;
  constexpr int Batch = PerThread < MaxBatch ? PerThread : MaxBatch;
  /* The box's rows and columns inside the matrix (at most the box's). */
  const unsigned valid_rows =
      row < rows ? unsigned(rows - row < u64(BoxRows) ? rows - row
                                                      : u64(BoxRows))
                 : 0u;
  const unsigned valid_cols =
      col < cols ? unsigned(cols - col < u64(BoxCols) ? cols - col
                                                      : u64(BoxCols))
                 : 0u;
  const char *from = reinterpret_cast<const char *>(
      src + (valid_rows && valid_cols ? row * ld + col : 0));
  const u64 pitch = ld * sizeof(T);
  const bool aligned = ((((u64)(size_t)from) | pitch) & 15u) == 0;
  const unsigned base = enigma_mma::smem(dst) + unsigned(4 * dst_base);
#pragma unroll
  for (int j0 = 0; j0 < PerThread; j0 += Batch) {
    unsigned v[Batch][4][4];
#pragma unroll
    for (int b = 0; b < Batch; ++b) {
      const unsigned block = ptid + 128u * unsigned(j0 + b);
      const unsigned r0 = 4u * (block % unsigned(KBlocks));
      const unsigned c0 = 4u * (block / unsigned(KBlocks));
      const bool here = j0 + b < PerThread && block < unsigned(Blocks);
      const char *p = from + u64(r0) * pitch + 4u * c0;
      if (here && aligned && r0 + 4u <= valid_rows &&
          c0 + 4u <= valid_cols) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          enigma_ring::load16(p + u64(i) * pitch, v[b][i]);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            v[b][i][e] = here && r0 + unsigned(i) < valid_rows &&
                                 c0 + unsigned(e) < valid_cols
                             ? *reinterpret_cast<const unsigned *>(
                                   p + u64(i) * pitch + 4u * unsigned(e))
                             : 0u;
      }
    }
#pragma unroll
    for (int b = 0; b < Batch; ++b) {
      const unsigned block = ptid + 128u * unsigned(j0 + b);
      if (j0 + b >= PerThread || block >= unsigned(Blocks))
        continue;
      const unsigned r0 = 4u * (block % unsigned(KBlocks));
      const unsigned c0 = 4u * (block / unsigned(KBlocks));
      const unsigned block_at = (r0 / unsigned(Bc)) * unsigned(Bs);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const unsigned at =
            block_at + unsigned(enigma_mma::swz<S0, S1, S2>(
                           u64((c0 + unsigned(e)) * unsigned(Bc) +
                               r0 % unsigned(Bc))));
        enigma_ring::store16(base + 4u * at, v[b][0][e], v[b][1][e],
                             v[b][2][e], v[b][3][e]);
      }
    }
  }
}
#endif

/* Producer warpgroup, in a ring with a transposing copy: every producer
 * thread counts the commit and arrives on the full barrier (which waits
 * for all 128) once its own stores (and, without the TMA, the first
 * warp's cp.async copies) are complete and fenced for the async proxy;
 * thread 0 arrives expecting the `bytes` of the ring's TMA copies. */
template <int S>
__device__ __forceinline__ void
enigma_ring_commit_transposed(EnigmaRing<S> &ring, unsigned slot,
                              unsigned bytes, unsigned ptid) {
#ifdef ENIGMA_HAS_RINGS
  const unsigned bar = ring.bars + 8u * slot;
  enigma_ring::copies_done();
  if (ring.tma && ptid == 0u)
    enigma_ring::arrive_expect_tx(bar, bytes);
  else
    enigma_ring::arrive(bar);
#else
  (void)slot, (void)bytes, (void)ptid;
#endif
  ++ring.next;
}

/* Consumers: the next slot, once its copies have landed. */
template <int S>
__device__ __forceinline__ unsigned
enigma_ring_wait(EnigmaRing<S> &ring, const EnigmaRingCheck *check = nullptr) {
  const unsigned slot = ring.next % unsigned(S), use = ring.next / unsigned(S);
  enigma_ring::wait(ring.bars + 8u * slot, use & 1u, check, slot, use);
  ++ring.next;
  return slot;
}

/* Consumers: the oldest slot not yet released is free again (each warp
 * arrives once, after all its lanes are done with it; with a cluster, in
 * every block of the cluster). */
template <int Cluster, int S>
__device__ __forceinline__ void enigma_ring_release(EnigmaRing<S> &ring,
                                                    unsigned lane) {
  const unsigned slot = ring.released % unsigned(S);
  __syncwarp();
#ifdef ENIGMA_HAS_RINGS
  if (lane == 0) {
    const unsigned bar = ring.bars + 8u * (unsigned(S) + slot);
    if (Cluster > 1) {
#pragma unroll
      for (int c = 0; c < Cluster; ++c)
        enigma_ring::arrive_in(bar, unsigned(c));
    } else {
      enigma_ring::arrive(bar);
    }
  }
#else
  (void)lane, (void)slot;
#endif
  ++ring.released;
}

/* The registers of a role (setmaxnreg; the kernel has
 * __launch_bounds__(threads, 1), so ptxas knows the count at entry,
 * `Launch` per thread). The producer warpgroup returns registers to the
 * block's pool; the consumers take their count from it (or return some,
 * when it is below the count at launch). `setmaxnreg.inc` waits until the
 * pool has the registers, so the verifier and the runtime make sure the
 * roles fit what the block holds (enigma/Support/RoleRegisters.h). */
template <int Registers>
__device__ __forceinline__ void enigma_producer_registers() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}
template <int Registers, int Launch>
__device__ __forceinline__ void enigma_consumer_registers() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if (Registers >= Launch)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}

/* A threadgroup barrier of the consumers only (named barrier 1): the
 * producer warpgroup never reaches it. */
__device__ __forceinline__ void enigma_consumer_barrier(unsigned threads) {
#ifdef __CUDA_ARCH__
  asm volatile("bar.sync 1, %0;\n" ::"r"(threads) : "memory");
#else
  (void)threads;
#endif
}

/* Turns of the consumer warpgroups (docs/design/consumer-turns.md): the
 * warpgroups of 128 consumer threads take turns round-robin. Warpgroup w
 * waits for its turn on named barrier ENIGMA_TURN_BARRIER + w, where 256
 * threads meet: its own 128 (bar.sync) and the 128 of the warpgroup before
 * it, which arrive (bar.arrive, no wait) when their turn ends. Barrier 0 is
 * __syncthreads, 1 the consumers' barrier. One warpgroup: no turns. */
#define ENIGMA_TURN_BARRIER 2u

/* 0, computed from `x`: a turn's wait adds it to its barrier number, so
 * that ptxas, which moves register arithmetic freely across bar.sync,
 * must finish the values a turn waits for (`after`) before the wait.
 * prmt with selector 0x4444 copies byte 0 of `dep` (0) into every byte;
 * neither compiler folds it away. */
__device__ __forceinline__ unsigned enigma_turn_after(unsigned dep, float x) {
#ifdef __CUDA_ARCH__
  asm volatile("prmt.b32 %0, %1, %0, 0x4444;\n"
               : "+r"(dep)
               : "r"(__float_as_uint(x)));
#else
  (void)x;
#endif
  return dep;
}
template <class Fragment>
__device__ __forceinline__ unsigned enigma_turn_after(unsigned dep,
                                                     const Fragment &x) {
#pragma unroll
  for (int i = 0; i < Fragment::size; ++i)
    dep = enigma_turn_after(dep, x.v[i]);
  return dep;
}

template <unsigned Groups>
__device__ __forceinline__ void enigma_turn_begin(unsigned thread,
                                                  unsigned after) {
#ifdef __CUDA_ARCH__
  if constexpr (Groups > 1)
    asm volatile("bar.sync %0, 256;\n" ::"r"(ENIGMA_TURN_BARRIER +
                                              thread / 128u + after)
                 : "memory");
#else
  (void)thread;
  (void)after;
#endif
}

template <unsigned Groups>
__device__ __forceinline__ void enigma_turn_end(unsigned thread) {
#ifdef __CUDA_ARCH__
  if constexpr (Groups > 1)
    asm volatile("bar.arrive %0, 256;\n" ::"r"(ENIGMA_TURN_BARRIER +
                                                (thread / 128u + 1u) % Groups)
                 : "memory");
#else
  (void)thread;
#endif
}

/* When the consumers start: the last warpgroup arrives as if its turn had
 * ended, so that warpgroup 0 takes the first turn. */
template <unsigned Groups>
__device__ __forceinline__ void enigma_turns_open(unsigned thread) {
#ifdef __CUDA_ARCH__
  if constexpr (Groups > 1)
    if (thread / 128u == Groups - 1u)
      asm volatile("bar.arrive %0, 256;\n" ::"n"(ENIGMA_TURN_BARRIER)
                   : "memory");
#else
  (void)thread;
#endif
}

/* When the consumers end: warpgroup 0 takes the last warpgroup's final
 * arrival (from its last turn, or from enigma_turns_open when no turn ran),
 * so that every arrival has met its wait. */
template <unsigned Groups>
__device__ __forceinline__ void enigma_turns_close(unsigned thread) {
#ifdef __CUDA_ARCH__
  if constexpr (Groups > 1)
    if (thread / 128u == 0u)
      asm volatile("bar.sync %0, 256;\n" ::"n"(ENIGMA_TURN_BARRIER)
                   : "memory");
#else
  (void)thread;
#endif
}

/* The end of a kernel with a cluster: no block leaves while another may
 * still deliver a multicast copy or a release into its shared memory. */
template <int Cluster> __device__ __forceinline__ void enigma_ring_end() {
#ifdef ENIGMA_HAS_RINGS
  if (Cluster > 1)
    enigma_ring::cluster_sync();
#endif
}

#endif /* ENIGMA_CUDA_PIPELINE_CUH */
