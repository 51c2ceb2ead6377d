/*===- enigma_cuda_mma.cuh - Fragments for tensor-core products -*- CUDA -*-=*
 *
 * The CUDA lowering of the mma family (docs/design/mma.md). A fragment
 * `enigma_frag<T, M, N>` is an M x N matrix held by the 32 lanes of a warp:
 * each lane keeps M*N/32 values, for every 16x8 block (blocks in row-major
 * order) the quartet of an mma.sync accumulator:
 *   v[4b + 0] = (16 bi + g,     8 bj + 2t)    v[4b + 1] = (.., 8 bj + 2t + 1)
 *   v[4b + 2] = (16 bi + g + 8, 8 bj + 2t)    v[4b + 3] = (.., 8 bj + 2t + 1)
 * with b = bi * (N / 8) + bj, g = lane / 4, t = lane % 4. A row vector
 * `enigma_row<T, M>` keeps rows 16 i + g (v[2i]) and 16 i + g + 8 (v[2i+1]).
 *
 * Here: the fragment types, the operand tiles' addressing, the PTX
 * wrappers, fragment loads, stores and reductions. Products
 * (enigma_cuda_mma_products.cuh): half / bfloat tiles through ldmatrix and
 * mma.sync m16n8k16 or wgmma; float tiles through m16n8k8 TF32 (when
 * allowed) or FMA in registers (enigma_cuda_mma_simt.cuh). Tile copies:
 * cp.async of 16-byte chunks with zero fill at the edges
 * (enigma_cuda_tile_copy.cuh).
 * Everything is unrolled at compile time so fragments stay in registers.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_MMA_CUH
#define ENIGMA_CUDA_MMA_CUH

#include "enigma_cuda_wgmma.cuh"

template <class T, int M, int N> struct enigma_frag {
  typedef T value_type;
  enum : int { size = M * N / 32, rows = M, cols = N };
  T v[size];
};
template <class T, int M> struct enigma_row {
  typedef T value_type;
  enum : int { size = M / 8, rows = M };
  T v[size];
};

namespace enigma_mma {

typedef unsigned long long u64;

/* CuTe's Swizzle<B, Base, S> of an element offset. */
template <int B, int Base, int S> __device__ __forceinline__ u64 swz(u64 x) {
  if (B == 0)
    return x;
  const u64 mask = ((1ull << B) - 1ull) << Base;
  if (S >= 0)
    return x ^ ((x >> (S >= 0 ? S : 0)) & mask);
  return x ^ ((x << (S < 0 ? -S : 0)) & mask);
}

/* Row and column of element i of an M x N fragment in lane `lane`. */
template <int N> __device__ __forceinline__ int row_of(int i, unsigned lane) {
  return 16 * ((i >> 2) / (N / 8)) + int(lane >> 2) + 8 * ((i & 3) >> 1);
}
template <int N> __device__ __forceinline__ int col_of(int i, unsigned lane) {
  return 8 * ((i >> 2) % (N / 8)) + 2 * int(lane & 3u) + (i & 1);
}
/* Index in the lane's row vector of the row of element i. */
template <int N> __device__ __forceinline__ int row_slot(int i) {
  return 2 * ((i >> 2) / (N / 8)) + ((i & 3) >> 1);
}

/* Whether a 16-bit operand type is half (else bfloat). */
template <class T> struct is_half { enum : bool { value = false }; };
#if ENIGMA_USE_HALF
template <> struct is_half<half> { enum : bool { value = true }; };
#endif

template <class T> __device__ __forceinline__ unsigned short bits16(T x) {
  return metal::detail::bit_cast<unsigned short>(x);
}
template <class T>
__device__ __forceinline__ unsigned pack2(T lo, T hi) {
  return unsigned(bits16(lo)) | (unsigned(bits16(hi)) << 16);
}

/* The PTX the helpers use, one wrapper each. A host build that defines
 * ENIGMA_MMA_EMULATION supplies its own (the emulation unit test). */
#ifndef ENIGMA_MMA_EMULATION
__device__ __forceinline__ unsigned smem(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned &r0,
                                        unsigned &r1, unsigned &r2,
                                        unsigned &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, "
               "[%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned addr, unsigned &r0,
                                              unsigned &r1, unsigned &r2,
                                              unsigned &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, "
               "%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

/* d += a * b, m16n8k16, f32 accumulators; Half selects f16 operands. */
template <bool Half>
__device__ __forceinline__ void mma16816(float *d, const unsigned *a,
                                         const unsigned *b) {
  if (Half)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, "
        "%3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* d += a * b, m16n8k8 TF32. */
__device__ __forceinline__ void mma1688_tf32(float *d, const unsigned *a,
                                             const unsigned *b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* d += a * b, m16n8k8 with f16 operands (A: 2 registers, B: 1). */
__device__ __forceinline__ void mma1688_f16(float *d, const unsigned *a,
                                            unsigned b) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b));
}

/* The transpose of an 8x8 matrix of 16-bit elements held as in ldmatrix
 * (lane l: row l / 4, columns 2 (l % 4) and the next). */
__device__ __forceinline__ unsigned movmatrix_trans(unsigned x) {
  unsigned r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n"
               : "=r"(r)
               : "r"(x));
  return r;
}

/* x as a TF32 operand: its 13 low mantissa bits cleared (truncation, as
 * wgmma reads f32 data as tf32; docs/design/tf32.md), so that both CUDA
 * paths and the CPU and Metal semantics multiply the same values. */
__device__ __forceinline__ unsigned to_tf32(float x) {
  return __float_as_uint(x) & 0xffffe000u;
}

__device__ __forceinline__ float as_float(unsigned x) {
  return __uint_as_float(x);
}

__device__ __forceinline__ float shfl_xor(float x, int mask) {
  return __shfl_xor_sync(0xffffffffu, x, mask);
}

__device__ __forceinline__ unsigned shfl_idx(unsigned x, int src) {
  return __shfl_sync(0xffffffffu, x, src);
}

/* 16 bytes from global to shared memory, of which `bytes` are read and the
 * rest zero-filled. */
__device__ __forceinline__ void cp_async16(unsigned dst, const void *src,
                                           unsigned bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(__cvta_generic_to_global(src)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int Pending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#if defined(ENIGMA_FENCE_AT_COPY_WAIT) && __CUDA_ARCH__ >= 900
  /* This thread's completed copies, for the warpgroup products after the
   * barrier (enigma_wgmma::begin_product). */
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
#endif /* ENIGMA_MMA_EMULATION */

/* An operand tile: element (r, c) of the logical tile lives at
 * p[base + swizzle(off + stored(sr, sc))] with (sr, sc) = (r, c) (Trans:
 * (c, r)) and stored(sr, sc) = sr * Ld + sc, or with column blocks (Bs > 0)
 * (sc / Ld) * Bs + sr * Ld + sc % Ld. */
template <class T, int Ld, bool Trans, int S0, int S1, int S2, int Bs = 0>
struct Tile {
  enum : bool { kTrans = Trans };
  enum : int { kLd = Ld, kS0 = S0, kS1 = S1, kS2 = S2, kBs = Bs };
  const T *p;
  u64 base, off;
  static __device__ __forceinline__ u64 stored(u64 sr, u64 sc) {
    return Bs > 0 ? (sc / Ld) * u64(Bs) + sr * Ld + sc % Ld : sr * Ld + sc;
  }
  __device__ __forceinline__ u64 at(int r, int c) const {
    return base + swz<S0, S1, S2>(off + (Trans ? stored(c, r) : stored(r, c)));
  }
  __device__ __forceinline__ T operator()(int r, int c) const {
    return p[at(r, c)];
  }
  /* Shared-memory byte address of the element at stored row `sr`, stored
   * column `sc` (what ldmatrix wants). */
  __device__ __forceinline__ unsigned addr(int sr, int sc) const {
    return smem(p) +
           unsigned(sizeof(T) * (base + swz<S0, S1, S2>(off + stored(sr, sc))));
  }
};

/* ---- 16-bit operands: ldmatrix + mma.sync m16n8k16 ---------------------- */

/* A registers of the 16 x 16 block (bi, kk) of an M x K tile in memory. */
template <class TA>
__device__ __forceinline__ void load_a16(const TA &A, int bi, int kk,
                                         unsigned lane, bool direct,
                                         unsigned *r) {
  const int q = int(lane >> 3), r8 = int(lane & 7u);
  if (direct) {
    const int m0 = 16 * bi + 8 * (q & 1), k0 = 16 * kk + 8 * (q >> 1);
    if (TA::kTrans) /* stored K x M: rows are k */
      ldsm_x4_trans(A.addr(k0 + r8, m0), r[0], r[1], r[2], r[3]);
    else
      ldsm_x4(A.addr(m0 + r8, k0), r[0], r[1], r[2], r[3]);
    return;
  }
  const int g = int(lane >> 2), t = int(lane & 3u);
  const int m = 16 * bi + g, k = 16 * kk + 2 * t;
  r[0] = pack2(A(m, k), A(m, k + 1));
  r[1] = pack2(A(m + 8, k), A(m + 8, k + 1));
  r[2] = pack2(A(m, k + 8), A(m, k + 9));
  r[3] = pack2(A(m + 8, k + 8), A(m + 8, k + 9));
}

/* B registers of the n-blocks 2 jb and 2 jb + 1 (16 columns) for the K
 * step kk: r[0..1] for block 2 jb, r[2..3] for block 2 jb + 1. */
template <class TB>
__device__ __forceinline__ void load_b16(const TB &B, int jb, int kk,
                                         unsigned lane, bool direct,
                                         unsigned *r) {
  const int q = int(lane >> 3), r8 = int(lane & 7u);
  if (direct) {
    if (TB::kTrans) { /* stored N x K: rows are n, k contiguous */
      const int n0 = 16 * jb + 8 * (q >> 1), k0 = 16 * kk + 8 * (q & 1);
      ldsm_x4(B.addr(n0 + r8, k0), r[0], r[1], r[2], r[3]);
    } else { /* stored K x N: rows are k */
      const int k0 = 16 * kk + 8 * (q & 1), n0 = 16 * jb + 8 * (q >> 1);
      ldsm_x4_trans(B.addr(k0 + r8, n0), r[0], r[1], r[2], r[3]);
    }
    return;
  }
  const int g = int(lane >> 2), t = int(lane & 3u);
  const int k = 16 * kk + 2 * t;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int n = 16 * jb + 8 * h + g;
    r[2 * h] = pack2(B(k, n), B(k + 1, n));
    r[2 * h + 1] = pack2(B(k + 8, n), B(k + 9, n));
  }
}

} // namespace enigma_mma

#include "enigma_cuda_mma_simt.cuh"

/*===--- Fragments -----------------------------------------------------------===*/

template <class F, class V> __device__ __forceinline__ F enigma_mma_fill(V value) {
  F f;
#pragma unroll
  for (int i = 0; i < F::size; ++i)
    f.v[i] = value;
  return f;
}

template <class F, int Dim>
__device__ __forceinline__ F enigma_mma_iota(unsigned lane) {
  F f;
#pragma unroll
  for (int i = 0; i < F::size; ++i)
    f.v[i] = Dim == 0 ? unsigned(enigma_mma::row_of<F::cols>(i, lane))
                      : unsigned(enigma_mma::col_of<F::cols>(i, lane));
  return f;
}

/* Element (r, c) = p[off + index(r, c)], one load per element: loads of
 * one address (the elements of a word that several codes share) are left
 * for the compiler to merge. */
template <class F, class P, class I>
__device__ __forceinline__ F enigma_mma_gather(P p, enigma_mma::u64 off,
                                               const I &index, unsigned) {
  F f;
  const P base = p + off; /* one 64-bit address; 32-bit offsets from it */
#pragma unroll
  for (int i = 0; i < F::size; ++i)
    f.v[i] = base[unsigned(index.v[i])];
  return f;
}

namespace enigma_mma {
/* Two adjacent elements, accessed as one 2-element-aligned unit. */
template <class T> struct alignas(2 * sizeof(T)) Pair {
  T x, y;
};

/* enigma_mma_load with ld = 0: element (r, c) = p[off + c] (Trans: p[off +
 * r]). A lane's elements cover 2 rows per 16-row block and 2 columns per
 * 8-column block; each distinct value is loaded once (bounded: 0 outside
 * rows x cols, not read). */
template <bool Trans, bool Bounded, class F, class P>
__device__ __forceinline__ void broadcast_load(F &f, P p, u64 off, u64 rows,
                                               u64 cols, unsigned lane) {
  typedef typename F::value_type T;
  constexpr int M = F::rows, N = F::cols;
  const u64 g = lane >> 2, t2 = 2u * (lane & 3u);
  if (Trans) { /* one value per row: rows 16 bi + g and 16 bi + g + 8 */
#pragma unroll
    for (int bi = 0; bi < M / 16; ++bi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const u64 r = u64(16 * bi + 8 * h) + g;
        const T v = (!Bounded || r < rows) ? T(p[off + r]) : T(0.0f);
#pragma unroll
        for (int bj = 0; bj < N / 8; ++bj)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const u64 c = u64(8 * bj) + t2 + u64(e);
            f.v[4 * (bi * (N / 8) + bj) + 2 * h + e] =
                (!Bounded || c < cols) ? v : T(0.0f);
          }
      }
  } else { /* one value per column: columns 8 bj + 2t and 8 bj + 2t + 1 */
#pragma unroll
    for (int bj = 0; bj < N / 8; ++bj)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const u64 c = u64(8 * bj) + t2 + u64(e);
        const T v = (!Bounded || c < cols) ? T(p[off + c]) : T(0.0f);
#pragma unroll
        for (int bi = 0; bi < M / 16; ++bi)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const u64 r = u64(16 * bi + 8 * h) + g;
            f.v[4 * (bi * (N / 8) + bj) + 2 * h + e] =
                (!Bounded || r < rows) ? v : T(0.0f);
          }
      }
  }
}
} // namespace enigma_mma

/* Element (r, c) = p[off + r * ld + c] (Trans: p[off + c * ld + r]); with
 * Bounded, elements at r >= rows or c >= cols are 0 and not read. Each
 * lane's elements 4b, 4b + 1 (and 4b + 2, 4b + 3) are neighbours in a row:
 * read as one pair when the row starts are even. */
template <class F, bool Trans, bool Bounded, class P>
__device__ __forceinline__ F enigma_mma_load(P p, enigma_mma::u64 off,
                                             enigma_mma::u64 ld,
                                             enigma_mma::u64 rows,
                                             enigma_mma::u64 cols,
                                             unsigned lane) {
  typedef typename F::value_type T;
  F f;
  if (ld == 0) {
    /* Every row reads the same elements (Trans: every column): a row or
     * column broadcast, such as a scale or bias vector. Each distinct
     * element is read once and shared by the elements that repeat it, so
     * the fragment costs registers for its distinct values only. */
    enigma_mma::broadcast_load<Trans, Bounded>(f, p, off, rows, cols, lane);
    return f;
  }
  const bool pairs = !Trans && ((off | ld) & 1u) == 0;
#pragma unroll
  for (int i = 0; i < F::size; i += 2) {
    const enigma_mma::u64 r = enigma_mma::row_of<F::cols>(i, lane);
    const enigma_mma::u64 c = enigma_mma::col_of<F::cols>(i, lane);
    const bool in0 = !Bounded || (r < rows && c < cols);
    const bool in1 = !Bounded || (r < rows && c + 1 < cols);
    if (pairs && in1) {
      const enigma_mma::Pair<T> v =
          *reinterpret_cast<const enigma_mma::Pair<T> *>(&p[off + r * ld + c]);
      f.v[i] = v.x;
      f.v[i + 1] = v.y;
      continue;
    }
    f.v[i] = in0 ? T(p[Trans ? off + c * ld + r : off + r * ld + c])
                 : T(0.0f);
    f.v[i + 1] = in1 ? T(p[Trans ? off + (c + 1) * ld + r
                                 : off + r * ld + c + 1])
                     : T(0.0f);
  }
  return f;
}

namespace enigma_mma {
struct alignas(16) Chunk16 {
  unsigned x, y, z, w;
};

/* x[i] for a run-time i in 0..3 (selects, no local memory). */
__device__ __forceinline__ unsigned pick4(const unsigned *x, unsigned i) {
  return i == 0 ? x[0] : i == 1 ? x[1] : i == 2 ? x[2] : x[3];
}

/* A whole 16-bit fragment with 16-byte aligned rows, stored 16 bytes per
 * lane: for each row and group of four 16x8 blocks the quad (lanes 4g ..
 * 4g + 3) transposes its pairs, so that lane t holds the 8 columns of
 * block 4q + t; a warp then writes 64 contiguous bytes of each of 8 rows
 * (pair stores use half of every 32-byte sector). */
template <class F, class P>
__device__ __forceinline__ void store_rows16(const F &f, P p, u64 off, u64 ld,
                                             unsigned lane) {
  constexpr int M = F::rows, N = F::cols;
  const unsigned g = lane >> 2, t = lane & 3u, quad = lane & ~3u;
#pragma unroll
  for (int bi = 0; bi < M / 16; ++bi)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int q = 0; q < N / 32; ++q) {
        unsigned mine[4], row[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int i = 4 * (bi * (N / 8) + 4 * q + j) + 2 * h;
          mine[j] = pack2(f.v[i], f.v[i + 1]);
        }
#pragma unroll
        for (unsigned k = 0; k < 4; ++k) {
          /* From lane t + k: its pair of block 4q + t, which it sends as
           * its element (s - k) & 3 (k = 0: this lane's own). */
          const unsigned send = pick4(mine, (t - k) & 3u);
          const unsigned got =
              k == 0 ? send : shfl_idx(send, int(quad | ((t + k) & 3u)));
          const unsigned from = (t + k) & 3u;
#pragma unroll
          for (unsigned j = 0; j < 4; ++j) /* selects: no local memory */
            if (j == from)
              row[j] = got;
        }
        const u64 r = u64(16 * bi + 8 * h) + g;
        const u64 c = u64(8 * (4 * q)) + 8u * t;
        *reinterpret_cast<Chunk16 *>(&p[off + r * ld + c]) =
            Chunk16{row[0], row[1], row[2], row[3]};
      }
}
} // namespace enigma_mma

template <bool Trans, bool Bounded, class F, class P>
__device__ __forceinline__ void
enigma_mma_store(const F &f, P p, enigma_mma::u64 off, enigma_mma::u64 ld,
                 enigma_mma::u64 rows, enigma_mma::u64 cols, unsigned lane) {
  typedef typename F::value_type T;
  if constexpr (!Trans && sizeof(T) == 2 && F::cols % 32 == 0) {
    /* whole fragments with 16-byte aligned rows: 16-byte stores */
    if ((!Bounded || (rows >= enigma_mma::u64(F::rows) &&
                      cols >= enigma_mma::u64(F::cols))) &&
        ((((enigma_mma::u64)(size_t)(&p[off])) | (ld * sizeof(T))) & 15u) ==
            0) {
      enigma_mma::store_rows16(f, p, off, ld, lane);
      return;
    }
  }
  const bool pairs = !Trans && ((off | ld) & 1u) == 0;
#pragma unroll
  for (int i = 0; i < F::size; i += 2) {
    const enigma_mma::u64 r = enigma_mma::row_of<F::cols>(i, lane);
    const enigma_mma::u64 c = enigma_mma::col_of<F::cols>(i, lane);
    const bool in0 = !Bounded || (r < rows && c < cols);
    const bool in1 = !Bounded || (r < rows && c + 1 < cols);
    if (pairs && in1) {
      *reinterpret_cast<enigma_mma::Pair<T> *>(&p[off + r * ld + c]) =
          enigma_mma::Pair<T>{f.v[i], f.v[i + 1]};
      continue;
    }
    if (in0)
      p[Trans ? off + c * ld + r : off + r * ld + c] = f.v[i];
    if (in1)
      p[Trans ? off + (c + 1) * ld + r : off + r * ld + c + 1] = f.v[i + 1];
  }
}

/* Kind: 0 sum, 1 max, 2 min (fmax / fmin: NaN only when a row is all NaN).
 * A lane combines its own values of a row, then the quad's four lanes. */
template <int Kind, class T, int M, int N>
__device__ __forceinline__ enigma_row<T, M>
enigma_mma_reduce_rows(const enigma_frag<T, M, N> &f) {
  /* max / min start from the first value, so an all-NaN row stays NaN */
  float acc[M / 8];
  bool first[M / 8];
#pragma unroll
  for (int s = 0; s < M / 8; ++s) {
    acc[s] = 0.0f;
    first[s] = true;
  }
#pragma unroll
  for (int i = 0; i < M * N / 32; ++i) {
    const int s = enigma_mma::row_slot<N>(i);
    const float x = float(f.v[i]);
    if (Kind == 0)
      acc[s] += x;
    else if (first[s])
      acc[s] = x;
    else
      acc[s] = Kind == 1 ? fmaxf(acc[s], x) : fminf(acc[s], x);
    first[s] = false;
  }
  enigma_row<T, M> out;
#pragma unroll
  for (int s = 0; s < M / 8; ++s) {
    float x = acc[s];
#pragma unroll
    for (int m = 1; m <= 2; m <<= 1) {
      const float y = enigma_mma::shfl_xor(x, m);
      x = Kind == 0 ? x + y : Kind == 1 ? fmaxf(x, y) : fminf(x, y);
    }
    out.v[s] = T(x);
  }
  return out;
}

template <class F, class T, int M>
__device__ __forceinline__ F enigma_mma_broadcast_rows(const enigma_row<T, M> &r) {
  F f;
#pragma unroll
  for (int i = 0; i < F::size; ++i)
    f.v[i] = r.v[enigma_mma::row_slot<F::cols>(i)];
  return f;
}

/* The 16-bit halves of M x N words (enigma.mma_halves). Word (r, c), c =
 * 8 b + 2 i + h, gives elements (r, j) and (r, j + 1), j = 16 b + 8 h + 2 i:
 * the 16 x 8 word block's elements 0 and 2 of a lane (columns 2t, rows g
 * and g + 8) become its elements of the first 16 x 8 block of halves,
 * elements 1 and 3 those of the second, each pair in one register where
 * a 16-bit product's A operand reads it. No data moves between lanes. */
template <class F, class W, int M, int N>
__device__ __forceinline__ F enigma_mma_halves(const enigma_frag<W, M, N> &w) {
  typedef typename F::value_type T;
  F f;
#pragma unroll
  for (int blk = 0; blk < M * N / 128; ++blk) {
    const int rb = blk / (N / 8), cb = blk % (N / 8);
    const int out = rb * (N / 4) + 2 * cb;   /* first of its two blocks */
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const unsigned word = metal::detail::bit_cast<unsigned>(w.v[4 * blk + e]);
      const int at = 4 * (out + (e & 1)) + 2 * (e >> 1);
      f.v[at] = metal::detail::bit_cast<T>((unsigned short)(word & 0xFFFFu));
      f.v[at + 1] = metal::detail::bit_cast<T>((unsigned short)(word >> 16));
    }
  }
  return f;
}

#include "enigma_cuda_mma_products.cuh"
#include "enigma_cuda_tile_copy.cuh"

#endif /* ENIGMA_CUDA_MMA_CUH */
