//===- enigma_cpu_mma.h - Fragments and products on the CPU -----*- C++ -*-===//
//
// The CPU lowering of the mma family (docs/design/mma.md). A fragment
// `enigma_frag<T, M, N>` is held by the 32 lanes of a simdgroup with whole
// rows per lane: lane l keeps rows l, l + 32, ... (v[j * N + c] is row
// l + 32 j, column c). A row vector `enigma_row<T, M>` keeps the same rows.
// Every operation is then lane-local: a product reads the lane's rows of A
// and all of B from memory, a row reduction reads the lane's own row. So
// none of them is a collective and they run inside the thread loops.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_MMA_H
#define ENIGMA_CPU_MMA_H

#include <stdint.h>
#include <string.h>

template <class T, int M, int N> struct enigma_frag {
  typedef T value_type;
  enum : int { rows = M, cols = N, lane_rows = (M + 31) / 32,
               size = lane_rows * N };
  T v[size];
};
template <class T, int M> struct enigma_row {
  typedef T value_type;
  enum : int { rows = M, lane_rows = (M + 31) / 32, size = lane_rows };
  T v[size];
};

namespace enigma_mma {

typedef uint64_t u64;

template <int B, int Base, int S> inline u64 swz(u64 x) {
  if (B == 0)
    return x;
  const u64 mask = ((u64(1) << B) - 1) << Base;
  if (S >= 0)
    return x ^ ((x >> (S >= 0 ? S : 0)) & mask);
  return x ^ ((x << (S < 0 ? -S : 0)) & mask);
}

// Offset of stored element (sr, sc) with pitch Ld, in column blocks Bs
// apart when Bs > 0.
template <int Ld, int Bs> inline u64 stored(u64 sr, u64 sc) {
  return Bs > 0 ? (sc / Ld) * u64(Bs) + sr * Ld + sc % Ld : sr * Ld + sc;
}

// Element (r, c) of a tile at p[base + swizzle(off + r * Ld + c)]
// (Trans: off + c * Ld + r; column blocks Bs apart), as a float.
template <int Ld, bool Trans, int S0, int S1, int S2, int Bs = 0, class T>
inline float tile(const T *p, u64 base, u64 off, u64 r, u64 c) {
  return float(p[base + swz<S0, S1, S2>(off + (Trans ? stored<Ld, Bs>(c, r)
                                                     : stored<Ld, Bs>(r, c)))]);
}

// A TF32 operand (docs/design/tf32.md): the float with its 13 low mantissa
// bits cleared, as wgmma reads f32 data as tf32 (truncation; a NaN whose
// payload lies only in those bits becomes an infinity, as there).
inline float tf32(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u &= 0xffffe000u;
  memcpy(&x, &u, sizeof u);
  return x;
}

// A product's operand: rounded to TF32 when the product allows it.
template <bool Tf32> inline float operand(float x) { return Tf32 ? tf32(x) : x; }

} // namespace enigma_mma

template <class F, class V> inline F enigma_mma_fill(V value) {
  F f{};
  for (int i = 0; i < F::size; ++i)
    f.v[i] = typename F::value_type(value);
  return f;
}

template <class F, int Dim> inline F enigma_mma_iota(uint32_t lane) {
  F f{};
  for (int j = 0; j < F::lane_rows; ++j)
    for (int c = 0; c < F::cols; ++c)
      f.v[j * F::cols + c] =
          typename F::value_type(Dim == 0 ? lane + 32u * j : uint32_t(c));
  return f;
}

// Element (r, c) = p[off + index(r, c)]; the rows a lane holds past the
// fragment's (lanes 16-31 of a 16-row fragment) read nothing.
template <class F, class P, class I>
inline F enigma_mma_gather(P p, uint64_t off, const I &index, uint32_t lane) {
  F f{};
  for (int j = 0; j < F::lane_rows; ++j) {
    if (lane + 32u * uint32_t(j) >= uint32_t(F::rows))
      break;
    for (int c = 0; c < F::cols; ++c)
      f.v[j * F::cols + c] = p[off + uint32_t(index.v[j * F::cols + c])];
  }
  return f;
}

template <class F, bool Trans, bool Bounded, class P>
inline F enigma_mma_load(P p, uint64_t off, uint64_t ld, uint64_t rows,
                         uint64_t cols, uint32_t lane) {
  F f{};
  for (int j = 0; j < F::lane_rows; ++j) {
    const uint64_t r = lane + 32u * uint64_t(j);
    if (r >= uint64_t(F::rows))
      break;
    for (uint64_t c = 0; c < uint64_t(F::cols); ++c) {
      if (Bounded && (r >= rows || c >= cols))
        continue;
      f.v[j * F::cols + c] = p[Trans ? off + c * ld + r : off + r * ld + c];
    }
  }
  return f;
}

template <bool Trans, bool Bounded, class F, class P>
inline void enigma_mma_store(const F &f, P p, uint64_t off, uint64_t ld,
                             uint64_t rows, uint64_t cols, uint32_t lane) {
  for (int j = 0; j < F::lane_rows; ++j) {
    const uint64_t r = lane + 32u * uint64_t(j);
    if (r >= uint64_t(F::rows))
      break;
    for (uint64_t c = 0; c < uint64_t(F::cols); ++c)
      if (!Bounded || (r < rows && c < cols))
        p[Trans ? off + c * ld + r : off + r * ld + c] = f.v[j * F::cols + c];
  }
}

// Kind: 0 sum (in column order), 1 max, 2 min (fmax / fmin: NaN only for an
// all-NaN row).
template <int Kind, class T, int M, int N>
inline enigma_row<T, M> enigma_mma_reduce_rows(const enigma_frag<T, M, N> &f) {
  enigma_row<T, M> out{};
  for (int j = 0; j < enigma_row<T, M>::lane_rows; ++j) {
    float acc = float(f.v[j * N]);
    for (int c = 1; c < N; ++c) {
      const float x = float(f.v[j * N + c]);
      acc = Kind == 0 ? acc + x : Kind == 1 ? fmax(acc, x) : fmin(acc, x);
    }
    out.v[j] = T(acc);
  }
  return out;
}

template <class F, class T, int M>
inline F enigma_mma_broadcast_rows(const enigma_row<T, M> &r) {
  F f{};
  for (int j = 0; j < F::lane_rows; ++j)
    for (int c = 0; c < F::cols; ++c)
      f.v[j * F::cols + c] = r.v[j];
  return f;
}

// The 16-bit halves of M x N words (enigma.mma_halves): word (r, c), c = 8 b
// + 2 i + h, gives elements (r, j) and (r, j + 1), j = 16 b + 8 h + 2 i.
template <class F, class W, int M, int N>
inline F enigma_mma_halves(const enigma_frag<W, M, N> &w) {
  static_assert(sizeof(W) == 4 && sizeof(typename F::value_type) == 2,
                "32-bit words, 16-bit halves");
  F f{};
  for (int r = 0; r < F::lane_rows; ++r)
    for (int c = 0; c < N; ++c) {
      uint32_t word;
      memcpy(&word, &w.v[r * N + c], 4);
      const int j = 16 * (c / 8) + 8 * (c % 2) + 2 * ((c % 8) / 2);
      const uint16_t half_bits[2] = {uint16_t(word), uint16_t(word >> 16)};
      memcpy(&f.v[r * F::cols + j], &half_bits[0], 2);
      memcpy(&f.v[r * F::cols + j + 1], &half_bits[1], 2);
    }
  return f;
}

// acc + A * B: each element of the lane's rows is a float fma chain in k
// order; with Tf32 (f32 tiles only) of the operands rounded to TF32.
// Products are complete at once here.
template <class F> inline F enigma_mma_wait(F acc) { return acc; }
template <int Pending, class F> inline F enigma_mma_wait_pending(F acc) {
  return acc;
}

template <int K, int ALd, bool ATr, int AS0, int AS1, int AS2, int ABs,
          int BLd, bool BTr, int BS0, int BS1, int BS2, int BBs, bool Tf32,
          bool Wg, bool Async, bool ZeroAcc = false, class T, int M,
          int N>
inline enigma_frag<float, M, N>
enigma_mma_sync(enigma_frag<float, M, N> acc, const T *a, uint64_t a_base,
                uint64_t a_off, const T *b, uint64_t b_base, uint64_t b_off,
                uint32_t lane) {
  using namespace enigma_mma;
  for (int j = 0; j < enigma_frag<float, M, N>::lane_rows; ++j) {
    const u64 r = lane + 32u * u64(j);
    if (r >= u64(M))
      break;
    for (int c = 0; c < N; ++c) {
      float s = acc.v[j * N + c];
      for (int k = 0; k < K; ++k)
        s = fma(operand<Tf32>(
                    tile<ALd, ATr, AS0, AS1, AS2, ABs>(a, a_base, a_off, r, k)),
                operand<Tf32>(
                    tile<BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, k, c)),
                s);
      acc.v[j * N + c] = s;
    }
  }
  return acc;
}

template <int BLd, bool BTr, int BS0, int BS1, int BS2, int BBs, bool Wg,
          bool Async, class T, int M, int N, int K>
inline enigma_frag<float, M, N>
enigma_mma_reg(enigma_frag<float, M, N> acc, const enigma_frag<T, M, K> &a,
               const T *b, uint64_t b_base, uint64_t b_off, uint32_t lane) {
  using namespace enigma_mma;
  for (int j = 0; j < enigma_frag<float, M, N>::lane_rows; ++j) {
    if (lane + 32u * u64(j) >= u64(M))
      break;
    for (int c = 0; c < N; ++c) {
      float s = acc.v[j * N + c];
      for (int k = 0; k < K; ++k)
        s = fma(float(a.v[j * K + k]),
                tile<BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, k, c), s);
      acc.v[j * N + c] = s;
    }
  }
  return acc;
}

// The thread's 16-byte chunks of the tile (chunk i by thread i mod
// nthreads), copied at once. Bs > 0: column blocks of DstLd, Bs apart,
// each swizzled inside itself.
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs = 0,
          class T>
inline void enigma_copy_tile_async(T *dst, uint64_t dst_base, const T *src,
                                   uint64_t src_off, uint64_t src_ld,
                                   uint64_t valid_rows, uint64_t valid_cols,
                                   uint32_t tid, uint32_t nthreads) {
  using namespace enigma_mma;
  const int E = 16 / int(sizeof(T));
  const int perRow = Cols / E;
  for (uint32_t i = tid; i < uint32_t(Rows * perRow); i += nthreads) {
    const u64 r = i / perRow, c0 = u64(i % perRow) * E;
    for (int e = 0; e < E; ++e) {
      const u64 c = c0 + e;
      const u64 block = Bs > 0 ? c / DstLd : 0, in = c - block * DstLd;
      dst[dst_base + block * Bs + swz<S0, S1, S2>(r * DstLd + in)] =
          r < valid_rows && c < valid_cols ? src[src_off + r * src_ld + c]
                                           : T(0);
    }
  }
}

inline void enigma_copy_async_commit() {}
template <int Pending> inline void enigma_copy_async_wait() {}

#endif // ENIGMA_CPU_MMA_H
