//===- enigma_cpu_simd.h - simd / quad functions for the CPU ----*- C++ -*-===//
//
// The CPU backend runs a threadgroup's threads in loops and keeps values that
// cross a simdgroup function in per-thread arrays indexed by the linear
// thread index (enigma-serialize-threads, which prints the calls as
// enigma.lanes_call). Each function below reads the operand array `x` and writes the
// result array `r` for the lanes of simdgroups [s0, s1) of a group of `n`
// threads; lanes at index >= n do not exist and take no part. A simdgroup is
// 32 consecutive indices, a quad 4. The semantics are Metal's, and the CUDA
// prelude's (enigma_cuda_prelude.cuh) for partial groups and out-of-range
// lanes:
//   - reductions combine the existing lanes in lane order;
//   - shuffle / broadcast read lane (lane % width), shuffle_xor reads
//     (me ^ (mask % width)), shuffle_up reads me - delta, shuffle_down
//     me + delta; a lane whose source is outside the group or does not exist
//     keeps its own value.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_SIMD_H
#define ENIGMA_CPU_SIMD_H

#include <stdint.h>

namespace enigma_cpu {

/// A lane operand that is the same for every thread (a constant).
struct Uniform {
  uint32_t v;
  uint32_t operator[](uint32_t) const { return v; }
};

struct OpAdd { template <class T> T operator()(T a, T b) const { return a + b; } };
struct OpMul { template <class T> T operator()(T a, T b) const { return a * b; } };
struct OpMin { template <class T> T operator()(T a, T b) const { return b < a ? b : a; } };
struct OpMax { template <class T> T operator()(T a, T b) const { return a < b ? b : a; } };
struct OpAnd { template <class T> T operator()(T a, T b) const { return a & b; } };
struct OpOr  { template <class T> T operator()(T a, T b) const { return a | b; } };
struct OpXor { template <class T> T operator()(T a, T b) const { return a ^ b; } };

/// Lanes [b, e) of a group of `width` starting at b.
template <uint32_t width, class F>
inline void for_each_group(uint32_t n, uint32_t s0, uint32_t s1, F f) {
  // s0, s1 count simdgroups (32 lanes); quads nest inside them.
  uint32_t end = s1 * 32u < n ? s1 * 32u : n;
  for (uint32_t b = s0 * 32u; b < end; b += width) {
    uint32_t e = b + width < end ? b + width : end;
    f(b, e);
  }
}

template <uint32_t width, class T, class Op>
inline void reduce(const T *x, T *r, uint32_t n, uint32_t s0, uint32_t s1, Op op) {
  for_each_group<width>(n, s0, s1, [&](uint32_t b, uint32_t e) {
    T acc = x[b];
    for (uint32_t i = b + 1; i < e; ++i)
      acc = op(acc, x[i]);
    for (uint32_t i = b; i < e; ++i)
      r[i] = acc;
  });
}

template <uint32_t width, bool inclusive, class T, class Op>
inline void scan(const T *x, T *r, uint32_t n, uint32_t s0, uint32_t s1, Op op,
                 T identity) {
  for_each_group<width>(n, s0, s1, [&](uint32_t b, uint32_t e) {
    T acc = identity;
    for (uint32_t i = b; i < e; ++i) {
      T v = x[i];
      if (!inclusive)
        r[i] = acc;
      acc = op(acc, v);
      if (inclusive)
        r[i] = acc;
    }
  });
}

enum class Shuffle { Index, Up, Down, Xor };

template <uint32_t width, Shuffle kind, class T, class L>
inline void shuffle(const T *x, const L &lane, T *r, uint32_t n, uint32_t s0,
                    uint32_t s1) {
  for_each_group<width>(n, s0, s1, [&](uint32_t b, uint32_t e) {
    uint32_t count = e - b;
    for (uint32_t i = b; i < e; ++i) {
      uint32_t me = i - b, a = lane[i], src;
      bool ok;
      switch (kind) {
      case Shuffle::Index: src = a & (width - 1); ok = src < count; break;
      case Shuffle::Xor: src = me ^ (a & (width - 1)); ok = src < count; break;
      case Shuffle::Up: ok = a <= me; src = me - a; break;
      default: ok = a < count - me; src = me + a; break;
      }
      r[i] = ok ? x[b + src] : x[i];
    }
  });
}

// --- Simdgroup matrices (8x8) ------------------------------------------------
//
// A matrix is held by the 32 lanes of a simdgroup: the per-thread array entry
// of lane l (a float2 / half2, type M below) holds elements 2l and 2l+1 of
// the tile in row-major order, i.e. row l / 4, columns 2 * (l % 4) and the
// next. Every function works on all 32 entries of each simdgroup in
// [s0, s1), the lanes of a partial simdgroup that do not exist included
// (the arrays have room for them), so a tile is always complete. Offsets and
// row strides (`off`, `epr`: a per-thread array or Uniform) are read from the
// simdgroup's first lane.

// Transpose: element (r, c) of the tile is src[off + c * epr + r].
template <bool Transpose = false, class M, class T, class L0, class L1>
inline void simdgroup_matrix_load(const T *src, const L0 &off, const L1 &epr,
                                  M *r, uint32_t, uint32_t s0, uint32_t s1) {
  for (uint32_t s = s0; s < s1; ++s) {
    uint32_t b = s * 32u;
    const T *tile = src + (uint64_t)off[b];
    uint64_t stride = epr[b];
    for (uint32_t l = 0; l < 32u; ++l)
      for (uint32_t j = 0; j < 2u; ++j) {
        uint64_t row = l / 4u, col = (l % 4u) * 2u + j;
        r[b + l][j] = Transpose ? tile[col * stride + row]
                                : tile[row * stride + col];
      }
  }
}

template <class M, class T, class L0, class L1>
inline void simdgroup_matrix_store(const M *m, T *dst, const L0 &off,
                                   const L1 &epr, uint32_t, uint32_t s0,
                                   uint32_t s1) {
  for (uint32_t s = s0; s < s1; ++s) {
    uint32_t b = s * 32u;
    T *tile = dst + (uint64_t)off[b];
    uint64_t stride = epr[b];
    for (uint32_t l = 0; l < 32u; ++l)
      for (uint32_t j = 0; j < 2u; ++j)
        tile[(l / 4u) * stride + (l % 4u) * 2u + j] = m[b + l][j];
  }
}

/// r = a * b + c; sums in float, rounded once to the element type.
template <class M>
inline void simdgroup_multiply_accumulate(const M *a, const M *bm, const M *c,
                                          M *r, uint32_t, uint32_t s0,
                                          uint32_t s1) {
  typedef typename M::value_type T;
  for (uint32_t s = s0; s < s1; ++s) {
    uint32_t b = s * 32u;
    float A[64], B[64], C[64];
    for (uint32_t l = 0; l < 32u; ++l)
      for (uint32_t j = 0; j < 2u; ++j) {
        A[2u * l + j] = float(a[b + l][j]);
        B[2u * l + j] = float(bm[b + l][j]);
        C[2u * l + j] = float(c[b + l][j]);
      }
    for (uint32_t i = 0; i < 8u; ++i)
      for (uint32_t j = 0; j < 8u; ++j) {
        float acc = 0.0f;
        for (uint32_t k = 0; k < 8u; ++k)
          acc += A[i * 8u + k] * B[k * 8u + j];
        r[b + i * 4u + j / 2u][j % 2u] = T(acc + C[i * 8u + j]);
      }
  }
}

template <class M, class T>
inline void make_filled_simdgroup_matrix(const T *value, M *r, uint32_t,
                                         uint32_t s0, uint32_t s1) {
  typedef typename M::value_type E;
  for (uint32_t s = s0; s < s1; ++s) {
    uint32_t b = s * 32u;
    E v = E(value[b]);
    for (uint32_t l = 0; l < 32u; ++l) {
      r[b + l][0] = v;
      r[b + l][1] = v;
    }
  }
}

} // namespace enigma_cpu

// The simdgroup matrix functions by the names enigma.lanes_call prints:
// enigma_cpu_<function>(arguments..., n, s0, s1).
template <class... A> inline void enigma_cpu_simdgroup_matrix_load(A... a) {
  enigma_cpu::simdgroup_matrix_load<false>(a...);
}
template <class... A>
inline void enigma_cpu_simdgroup_matrix_load_transposed(A... a) {
  enigma_cpu::simdgroup_matrix_load<true>(a...);
}
template <class... A> inline void enigma_cpu_simdgroup_matrix_store(A... a) {
  enigma_cpu::simdgroup_matrix_store(a...);
}
template <class... A>
inline void enigma_cpu_simdgroup_multiply_accumulate(A... a) {
  enigma_cpu::simdgroup_multiply_accumulate(a...);
}
template <class... A>
inline void enigma_cpu_make_filled_simdgroup_matrix(A... a) {
  enigma_cpu::make_filled_simdgroup_matrix(a...);
}

// enigma_cpu_<group>_<name>(x, r, n, s0, s1[, lane]) for the simd (32 lanes)
// and quad (4 lanes) families: one line per function.
#define ENIGMA_CPU_REDUCTION(group, width, name, Op)                           \
  template <class T>                                                           \
  inline void enigma_cpu_##group##_##name(const T *x, T *r, uint32_t n,        \
                                          uint32_t s0, uint32_t s1) {          \
    enigma_cpu::reduce<width>(x, r, n, s0, s1, enigma_cpu::Op());              \
  }
#define ENIGMA_CPU_SCAN(group, width, name, inclusive, Op, identity)           \
  template <class T>                                                           \
  inline void enigma_cpu_##group##_##name(const T *x, T *r, uint32_t n,        \
                                          uint32_t s0, uint32_t s1) {          \
    enigma_cpu::scan<width, inclusive>(x, r, n, s0, s1, enigma_cpu::Op(),      \
                                       T(identity));                           \
  }
#define ENIGMA_CPU_SHUFFLE(group, width, name, kind)                           \
  template <class T, class L>                                                  \
  inline void enigma_cpu_##group##_##name(const T *x, const L &lane, T *r,     \
                                          uint32_t n, uint32_t s0,             \
                                          uint32_t s1) {                       \
    enigma_cpu::shuffle<width, enigma_cpu::Shuffle::kind>(x, lane, r, n, s0,   \
                                                          s1);                 \
  }
#define ENIGMA_CPU_GROUP_FUNCTIONS(group, width)                               \
  ENIGMA_CPU_REDUCTION(group, width, sum, OpAdd)                               \
  ENIGMA_CPU_REDUCTION(group, width, product, OpMul)                           \
  ENIGMA_CPU_REDUCTION(group, width, min, OpMin)                               \
  ENIGMA_CPU_REDUCTION(group, width, max, OpMax)                               \
  ENIGMA_CPU_REDUCTION(group, width, and, OpAnd)                               \
  ENIGMA_CPU_REDUCTION(group, width, or, OpOr)                                 \
  ENIGMA_CPU_REDUCTION(group, width, xor, OpXor)                               \
  ENIGMA_CPU_SCAN(group, width, prefix_exclusive_sum, false, OpAdd, 0)         \
  ENIGMA_CPU_SCAN(group, width, prefix_inclusive_sum, true, OpAdd, 0)          \
  ENIGMA_CPU_SCAN(group, width, prefix_exclusive_product, false, OpMul, 1)     \
  ENIGMA_CPU_SCAN(group, width, prefix_inclusive_product, true, OpMul, 1)      \
  ENIGMA_CPU_SHUFFLE(group, width, shuffle, Index)                             \
  ENIGMA_CPU_SHUFFLE(group, width, broadcast, Index)                           \
  ENIGMA_CPU_SHUFFLE(group, width, shuffle_up, Up)                             \
  ENIGMA_CPU_SHUFFLE(group, width, shuffle_down, Down)                         \
  ENIGMA_CPU_SHUFFLE(group, width, shuffle_xor, Xor)
ENIGMA_CPU_GROUP_FUNCTIONS(simd, 32u)
ENIGMA_CPU_GROUP_FUNCTIONS(quad, 4u)

// Votes and lane queries of a simdgroup: every lane that exists takes part
// (they are reached by all lanes), so a ballot of `true` is the mask of the
// lanes that exist and the first lane is lane 0.
template <class B>
inline void enigma_cpu_simd_any(const B *x, B *r, uint32_t n, uint32_t s0,
                                uint32_t s1) {
  enigma_cpu::reduce<32u>(x, r, n, s0, s1, enigma_cpu::OpOr());
}
template <class B>
inline void enigma_cpu_simd_all(const B *x, B *r, uint32_t n, uint32_t s0,
                                uint32_t s1) {
  enigma_cpu::reduce<32u>(x, r, n, s0, s1, enigma_cpu::OpAnd());
}
template <class B, class R>
inline void enigma_cpu_simd_ballot(const B *x, R *r, uint32_t n, uint32_t s0,
                                   uint32_t s1) {
  enigma_cpu::for_each_group<32u>(n, s0, s1, [&](uint32_t b, uint32_t e) {
    R bits = 0;
    for (uint32_t i = b; i < e; ++i)
      if (x[i])
        bits |= R(1) << (i - b);
    for (uint32_t i = b; i < e; ++i)
      r[i] = bits;
  });
}
template <class R>
inline void enigma_cpu_simd_active_threads_mask(R *r, uint32_t n, uint32_t s0,
                                                uint32_t s1) {
  enigma_cpu::for_each_group<32u>(n, s0, s1, [&](uint32_t b, uint32_t e) {
    R bits = e - b == 32u ? R(0xffffffffu) : (R(1) << (e - b)) - 1u;
    for (uint32_t i = b; i < e; ++i)
      r[i] = bits;
  });
}
template <class B>
inline void enigma_cpu_simd_is_first(B *r, uint32_t n, uint32_t s0,
                                     uint32_t s1) {
  enigma_cpu::for_each_group<32u>(n, s0, s1, [&](uint32_t b, uint32_t e) {
    for (uint32_t i = b; i < e; ++i)
      r[i] = i == b;
  });
}
#undef ENIGMA_CPU_GROUP_FUNCTIONS
#undef ENIGMA_CPU_SHUFFLE
#undef ENIGMA_CPU_SCAN
#undef ENIGMA_CPU_REDUCTION

#endif // ENIGMA_CPU_SIMD_H
