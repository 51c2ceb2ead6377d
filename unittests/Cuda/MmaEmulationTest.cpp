//===- MmaEmulationTest.cpp - The CUDA mma helpers on an emulated warp ----===//
//
// enigma_cuda_mma.cuh compiled for the host with its PTX wrappers replaced
// by emulations written from the PTX ISA's definitions (ldmatrix's row
// addresses and fragment distribution, mma.sync's m16n8k16 / m16n8k8
// fragment layouts, cp.async's zero fill, shfl.xor), and run by 32 fibers
// in lock step: every lane runs up to its next warp-wide instruction, which
// is then computed from all lanes' operands. The results are compared with
// a double-precision reference of the same inputs, so the index arithmetic
// of the helpers (fragment layouts, ldmatrix addresses, swizzles, the
// unaligned fallbacks, the TF32 and FMA paths, reductions, copies) is
// checked without a GPU. ldmatrix and cp.async also check the alignment
// the hardware requires.
//
//===----------------------------------------------------------------------===//
#include "metal_semantics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <ucontext.h>
#include <vector>

using namespace metal;

namespace emu {

constexpr int kLanes = 32;
enum Op {
  None, Ldsm, LdsmTrans, Mma16Bf, Mma16Half, MmaTf32, Mma8Half, Movm, Shfl,
  ShflIdx
};

struct Warp {
  ucontext_t sched;
  ucontext_t lane[kLanes];
  std::vector<char> stacks[kLanes];
  bool done[kLanes] = {};
  Op pending[kLanes] = {};
  uint32_t in[kLanes][12] = {};
  uint32_t out[kLanes][4] = {};
  int current = 0;
  std::function<void(unsigned)> body;
  std::exception_ptr error; // thrown by a lane (e.g. a misaligned address)
};

Warp *g_warp = nullptr;
char *g_arena = nullptr; // "shared memory": addresses are offsets into it

void trampoline() {
  Warp *w = g_warp;
  int lane = w->current;
  try {
    w->body(unsigned(lane));
  } catch (...) {
    if (!w->error)
      w->error = std::current_exception();
  }
  w->done[lane] = true;
  swapcontext(&w->lane[lane], &w->sched);
}

/// Suspends the lane at a warp-wide instruction; returns once it is done.
void collective(Op op) {
  Warp *w = g_warp;
  int lane = w->current;
  w->pending[lane] = op;
  swapcontext(&w->lane[lane], &w->sched);
}

float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float operand16(uint16_t bits, bool isHalf) {
  return isHalf ? float(half::from_bits(bits)) : float(bfloat::from_bits(bits));
}

uint16_t sharedHalfword(uint32_t addr) {
  uint16_t v;
  std::memcpy(&v, g_arena + addr, 2);
  return v;
}

/// Computes the pending instruction from every lane's operands.
void execute(Warp &w, Op op) {
  auto lo = [](uint32_t r) { return uint16_t(r & 0xffffu); };
  auto hi = [](uint32_t r) { return uint16_t(r >> 16); };
  switch (op) {
  case Ldsm:
  case LdsmTrans:
    // Matrix j's row i is at the address of lane 8 j + i (16 bytes).
    for (int l = 0; l < kLanes; ++l)
      if (w.in[l][0] % 16 != 0)
        throw std::runtime_error("ldmatrix row address not 16-byte aligned");
    for (int t = 0; t < kLanes; ++t)
      for (int j = 0; j < 4; ++j) {
        auto at = [&](int row, int col) {
          return sharedHalfword(w.in[8 * j + row][0] + 2 * col);
        };
        uint16_t a, b;
        if (op == Ldsm) { // row t/4, columns 2 (t%4), + 1
          a = at(t / 4, 2 * (t % 4));
          b = at(t / 4, 2 * (t % 4) + 1);
        } else { // transposed: rows 2 (t%4), + 1 of column t/4
          a = at(2 * (t % 4), t / 4);
          b = at(2 * (t % 4) + 1, t / 4);
        }
        w.out[t][j] = uint32_t(a) | (uint32_t(b) << 16);
      }
    break;
  case Mma16Bf:
  case Mma16Half: {
    // PTX ISA, mma.m16n8k16 with .f16/.bf16 operands.
    bool isHalf = op == Mma16Half;
    double A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, t = l % 4;
      const uint32_t *a = w.in[l], *b = w.in[l] + 4, *c = w.in[l] + 6;
      A[g][2 * t] = operand16(lo(a[0]), isHalf);
      A[g][2 * t + 1] = operand16(hi(a[0]), isHalf);
      A[g + 8][2 * t] = operand16(lo(a[1]), isHalf);
      A[g + 8][2 * t + 1] = operand16(hi(a[1]), isHalf);
      A[g][2 * t + 8] = operand16(lo(a[2]), isHalf);
      A[g][2 * t + 9] = operand16(hi(a[2]), isHalf);
      A[g + 8][2 * t + 8] = operand16(lo(a[3]), isHalf);
      A[g + 8][2 * t + 9] = operand16(hi(a[3]), isHalf);
      B[2 * t][g] = operand16(lo(b[0]), isHalf);
      B[2 * t + 1][g] = operand16(hi(b[0]), isHalf);
      B[2 * t + 8][g] = operand16(lo(b[1]), isHalf);
      B[2 * t + 9][g] = operand16(hi(b[1]), isHalf);
      C[g][2 * t] = bitsToFloat(c[0]);
      C[g][2 * t + 1] = bitsToFloat(c[1]);
      C[g + 8][2 * t] = bitsToFloat(c[2]);
      C[g + 8][2 * t + 1] = bitsToFloat(c[3]);
    }
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, t = l % 4;
      int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t,
                                                     2 * t + 1};
      for (int e = 0; e < 4; ++e) {
        double s = C[rows[e]][cols[e]];
        for (int k = 0; k < 16; ++k)
          s += A[rows[e]][k] * B[k][cols[e]];
        w.out[l][e] = floatToBits(float(s));
      }
    }
    break;
  }
  case MmaTf32: {
    // PTX ISA, mma.m16n8k8 with .tf32 operands (19-bit values in 32 bits).
    double A[16][8], B[8][8], C[16][8];
    for (int l = 0; l < kLanes; ++l) {
      for (int i = 0; i < 6; ++i)
        if (w.in[l][i] & 0x1fffu)
          throw std::runtime_error("a tf32 operand has low mantissa bits set");
      int g = l / 4, t = l % 4;
      const uint32_t *a = w.in[l], *b = w.in[l] + 4, *c = w.in[l] + 6;
      A[g][t] = bitsToFloat(a[0]);
      A[g + 8][t] = bitsToFloat(a[1]);
      A[g][t + 4] = bitsToFloat(a[2]);
      A[g + 8][t + 4] = bitsToFloat(a[3]);
      B[t][g] = bitsToFloat(b[0]);
      B[t + 4][g] = bitsToFloat(b[1]);
      C[g][2 * t] = bitsToFloat(c[0]);
      C[g][2 * t + 1] = bitsToFloat(c[1]);
      C[g + 8][2 * t] = bitsToFloat(c[2]);
      C[g + 8][2 * t + 1] = bitsToFloat(c[3]);
    }
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, t = l % 4;
      int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t,
                                                     2 * t + 1};
      for (int e = 0; e < 4; ++e) {
        double s = C[rows[e]][cols[e]];
        for (int k = 0; k < 8; ++k)
          s += A[rows[e]][k] * B[k][cols[e]];
        w.out[l][e] = floatToBits(float(s));
      }
    }
    break;
  }
  case Mma8Half: {
    // PTX ISA, mma.m16n8k8 with .f16 operands: A a0,a1 (row g) a2,a3
    // (row g + 8) at columns 2t, 2t + 1; B b0,b1 at rows 2t, 2t + 1 of
    // column g.
    double A[16][8], B[8][8], C[16][8];
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, t = l % 4;
      const uint32_t *a = w.in[l], b = w.in[l][2], *c = w.in[l] + 6;
      A[g][2 * t] = operand16(lo(a[0]), true);
      A[g][2 * t + 1] = operand16(hi(a[0]), true);
      A[g + 8][2 * t] = operand16(lo(a[1]), true);
      A[g + 8][2 * t + 1] = operand16(hi(a[1]), true);
      B[2 * t][g] = operand16(lo(b), true);
      B[2 * t + 1][g] = operand16(hi(b), true);
      C[g][2 * t] = bitsToFloat(c[0]);
      C[g][2 * t + 1] = bitsToFloat(c[1]);
      C[g + 8][2 * t] = bitsToFloat(c[2]);
      C[g + 8][2 * t + 1] = bitsToFloat(c[3]);
    }
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, t = l % 4;
      int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * t, 2 * t + 1, 2 * t,
                                                     2 * t + 1};
      for (int e = 0; e < 4; ++e) {
        double s = C[rows[e]][cols[e]];
        for (int k = 0; k < 8; ++k)
          s += A[rows[e]][k] * B[k][cols[e]];
        w.out[l][e] = floatToBits(float(s));
      }
    }
    break;
  }
  case Movm:
    // movmatrix.trans: lane (g, t) receives elements (2t, g), (2t + 1, g)
    // of the matrix whose row g, columns 2t, 2t + 1 lane (g, t) holds.
    for (int l = 0; l < kLanes; ++l) {
      int g = l / 4, t = l % 4;
      auto element = [&](int row, int col) {
        uint32_t word = w.in[row * 4 + col / 2][0];
        return (col % 2) ? hi(word) : lo(word);
      };
      w.out[l][0] = uint32_t(element(2 * t, g)) |
                    (uint32_t(element(2 * t + 1, g)) << 16);
    }
    break;
  case Shfl:
    for (int l = 0; l < kLanes; ++l)
      w.out[l][0] = w.in[(l ^ int(w.in[l][1])) & 31][0];
    break;
  case ShflIdx:
    for (int l = 0; l < kLanes; ++l)
      w.out[l][0] = w.in[int(w.in[l][1]) & 31][0];
    break;
  case None:
    break;
  }
}

/// Runs `body(lane)` on 32 fibers in lock step at warp-wide instructions.
void runWarp(std::function<void(unsigned)> body) {
  Warp w;
  w.body = std::move(body);
  g_warp = &w;
  for (int l = 0; l < kLanes; ++l) {
    w.stacks[l].resize(1 << 20);
    getcontext(&w.lane[l]);
    w.lane[l].uc_stack.ss_sp = w.stacks[l].data();
    w.lane[l].uc_stack.ss_size = w.stacks[l].size();
    w.lane[l].uc_link = nullptr;
    makecontext(&w.lane[l], trampoline, 0);
  }
  for (;;) {
    for (int l = 0; l < kLanes; ++l) {
      if (w.done[l])
        continue;
      w.pending[l] = None;
      w.current = l;
      swapcontext(&w.sched, &w.lane[l]);
    }
    if (w.error)
      std::rethrow_exception(w.error);
    int finished = 0;
    for (int l = 0; l < kLanes; ++l)
      finished += w.done[l];
    if (finished == kLanes)
      break;
    if (finished != 0)
      throw std::runtime_error("lanes diverged at a warp-wide instruction");
    Op op = w.pending[0];
    for (int l = 1; l < kLanes; ++l)
      if (w.pending[l] != op)
        throw std::runtime_error("lanes reached different instructions");
    try {
      execute(w, op);
    } catch (...) {
      // Let the suspended lanes go; the error is the warp's result.
      g_warp = nullptr;
      throw;
    }
  }
  g_warp = nullptr;
}

} // namespace emu

// The PTX wrappers of enigma_cuda_mma.cuh, emulated.
#define __device__
#define __forceinline__ inline
#define ENIGMA_MMA_EMULATION 1
#define ENIGMA_USE_HALF 1
#define ENIGMA_USE_BFLOAT 1
namespace enigma_mma {
inline unsigned smem(const void *p) {
  return unsigned(static_cast<const char *>(p) - emu::g_arena);
}
inline void ldsm(bool trans, unsigned addr, unsigned &r0, unsigned &r1,
                 unsigned &r2, unsigned &r3) {
  emu::Warp &w = *emu::g_warp;
  w.in[w.current][0] = addr;
  emu::collective(trans ? emu::LdsmTrans : emu::Ldsm);
  const uint32_t *o = emu::g_warp->out[emu::g_warp->current];
  r0 = o[0], r1 = o[1], r2 = o[2], r3 = o[3];
}
inline void ldsm_x4(unsigned addr, unsigned &r0, unsigned &r1, unsigned &r2,
                    unsigned &r3) {
  ldsm(false, addr, r0, r1, r2, r3);
}
inline void ldsm_x4_trans(unsigned addr, unsigned &r0, unsigned &r1,
                          unsigned &r2, unsigned &r3) {
  ldsm(true, addr, r0, r1, r2, r3);
}
inline void mmaOp(emu::Op op, float *d, const unsigned *a, const unsigned *b) {
  emu::Warp &w = *emu::g_warp;
  uint32_t *in = w.in[w.current];
  for (int i = 0; i < 4; ++i)
    in[i] = a[i];
  in[4] = b[0], in[5] = b[1];
  for (int i = 0; i < 4; ++i)
    in[6 + i] = emu::floatToBits(d[i]);
  emu::collective(op);
  const uint32_t *o = emu::g_warp->out[emu::g_warp->current];
  for (int i = 0; i < 4; ++i)
    d[i] = emu::bitsToFloat(o[i]);
}
template <bool Half>
inline void mma16816(float *d, const unsigned *a, const unsigned *b) {
  mmaOp(Half ? emu::Mma16Half : emu::Mma16Bf, d, a, b);
}
inline void mma1688_tf32(float *d, const unsigned *a, const unsigned *b) {
  mmaOp(emu::MmaTf32, d, a, b);
}
inline void mma1688_f16(float *d, const unsigned *a, unsigned b) {
  const unsigned ab[4] = {a[0], a[1], b, 0u};
  emu::Warp &w = *emu::g_warp;
  uint32_t *in = w.in[w.current];
  in[0] = ab[0], in[1] = ab[1], in[2] = ab[2];
  for (int i = 0; i < 4; ++i)
    in[6 + i] = emu::floatToBits(d[i]);
  emu::collective(emu::Mma8Half);
  const uint32_t *o = emu::g_warp->out[emu::g_warp->current];
  for (int i = 0; i < 4; ++i)
    d[i] = emu::bitsToFloat(o[i]);
}
inline unsigned movmatrix_trans(unsigned x) {
  emu::Warp &w = *emu::g_warp;
  w.in[w.current][0] = x;
  emu::collective(emu::Movm);
  return emu::g_warp->out[emu::g_warp->current][0];
}
inline unsigned to_tf32(float x) { // the 13 low mantissa bits cleared
  return emu::floatToBits(x) & 0xffffe000u;
}
inline float as_float(unsigned x) { return emu::bitsToFloat(x); }
inline float shfl_xor(float x, int mask) {
  emu::Warp &w = *emu::g_warp;
  w.in[w.current][0] = emu::floatToBits(x);
  w.in[w.current][1] = uint32_t(mask);
  emu::collective(emu::Shfl);
  return emu::bitsToFloat(emu::g_warp->out[emu::g_warp->current][0]);
}
inline unsigned shfl_idx(unsigned x, int src) {
  emu::Warp &w = *emu::g_warp;
  w.in[w.current][0] = x;
  w.in[w.current][1] = uint32_t(src);
  emu::collective(emu::ShflIdx);
  return emu::g_warp->out[emu::g_warp->current][0];
}
inline void cp_async16(unsigned dst, const void *src, unsigned bytes) {
  if (dst % 16 || reinterpret_cast<uintptr_t>(src) % 16 || bytes > 16)
    throw std::runtime_error("cp.async of 16 bytes needs aligned addresses");
  std::memset(emu::g_arena + dst, 0, 16);
  std::memcpy(emu::g_arena + dst, src, bytes);
}
inline void cp_async_commit() {}
template <int Pending> inline void cp_async_wait() {}
} // namespace enigma_mma

#include "enigma_cuda_mma.cuh"

namespace {

using u64 = unsigned long long;

/// 48 KiB of "shared memory", 1 KiB aligned.
struct Arena {
  alignas(1024) char bytes[48 * 1024];
  Arena() {
    std::memset(bytes, 0, sizeof bytes);
    emu::g_arena = bytes;
  }
  template <class T> T *at(size_t byteOffset) {
    return reinterpret_cast<T *>(bytes + byteOffset);
  }
};

u64 swizzle(int b, int base, int s, u64 x) {
  if (b == 0)
    return x;
  u64 mask = ((1ull << b) - 1) << base;
  return s >= 0 ? x ^ ((x >> s) & mask) : x ^ ((x << -s) & mask);
}

/// A rows x cols logical tile stored at p[base + swizzle(off + r * ld + c)]
/// (transposed: off + c * ld + r), filled with values exact in T.
template <class T> struct StoredTile {
  int rows, cols, ld;
  bool trans;
  int sw[3];
  u64 base, off;
  std::vector<double> value; // row-major logical values
  u64 blockStride = 0;       // column blocks of ld, this far apart

  void fill(T *p, std::mt19937 &rng, bool tf32 = false) {
    std::uniform_int_distribution<int> d(-8, 8);
    value.assign(size_t(rows) * cols, 0.0);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        double v = d(rng) / 4.0 + (tf32 ? d(rng) / 1024.0 : 0.0);
        u64 sr = trans ? c : r, sc = trans ? r : c;
        u64 at = off + (blockStride ? (sc / ld) * blockStride + sr * ld + sc % ld
                                    : sr * ld + sc);
        p[base + swizzle(sw[0], sw[1], sw[2], at)] = T(float(v));
        value[size_t(r) * cols + c] = double(float(T(float(v))));
      }
  }
};

double tf32Round(double x) {
  return emu::bitsToFloat(enigma_mma::to_tf32(float(x)));
}

/// C = A B in double from the stored tiles' values.
template <class TA, class TB>
std::vector<double> product(const StoredTile<TA> &a, const StoredTile<TB> &b,
                            bool tf32 = false) {
  int m = a.rows, k = a.cols, n = b.cols;
  std::vector<double> c(size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int q = 0; q < k; ++q) {
        double x = a.value[size_t(i) * k + q], y = b.value[size_t(q) * n + j];
        if (tf32)
          x = tf32Round(x), y = tf32Round(y);
        s += x * y;
      }
      c[size_t(i) * n + j] = s;
    }
  return c;
}

/// Runs one enigma_mma_sync on a warp and compares with the reference.
template <class T, int M, int N, int K, int LDA, bool TA, int A0, int A1,
          int A2, int LDB, bool TB, int B0, int B1, int B2, bool Tf32 = false,
          int BBS = 0>
void checkMma(u64 aBase, u64 aOff, u64 bBase, u64 bOff, double tol = 1e-4) {
  Arena arena;
  std::mt19937 rng(M * 131 + N * 7 + K + LDA + LDB + int(aOff + bOff));
  T *a = arena.at<T>(0), *b = arena.at<T>(16 * 1024);
  StoredTile<T> A{M, K, LDA, TA, {A0, A1, A2}, aBase, aOff, {}};
  StoredTile<T> B{K, N, LDB, TB, {B0, B1, B2}, bBase, bOff, {}, u64(BBS)};
  A.fill(a, rng, Tf32);
  B.fill(b, rng, Tf32);
  float *c = arena.at<float>(32 * 1024);
  // A non-zero start: the product accumulates.
  emu::runWarp([&](unsigned lane) {
    auto acc = enigma_mma_fill<enigma_frag<float, M, N>>(0.5f);
    acc = enigma_mma_sync<K, LDA, TA, A0, A1, A2, 0, LDB, TB, B0, B1, B2, BBS,
                          Tf32, false, false>(acc, a, aBase, aOff, b, bBase,
                                              bOff, lane);
    enigma_mma_store<false, false>(acc, c, 0, N, 0, 0, lane);
  });
  std::vector<double> want = product(A, B, Tf32);
  for (int i = 0; i < M * N; ++i)
    ASSERT_NEAR(c[i], want[i] + 0.5, tol * (1 + std::fabs(want[i])))
        << "element (" << i / N << ", " << i % N << ")";
}

// 16-bit operands: every layout, with and without swizzles, and offsets
// that are not 16-byte aligned (the element-wise fallback).
TEST(MmaEmulation, Bf16RowMajorOperands) {
  checkMma<bfloat, 16, 16, 16, 16, false, 0, 0, 0, 16, false, 0, 0, 0>(0, 0,
                                                                        0, 0);
  checkMma<bfloat, 64, 64, 32, 32, false, 2, 3, 3, 64, false, 3, 3, 3>(0, 0,
                                                                        0, 0);
}

// The layout of a warpgroup product (gemm_block's Hopper shape): rows of
// 64 elements under Swizzle<3, 3, 3>, B stored K x N in blocks of 64
// columns 4096 elements apart; through ldmatrix and element reads.
TEST(MmaEmulation, Bf16ColumnBlockedB) {
  checkMma<bfloat, 16, 128, 64, 64, false, 3, 3, 3, 64, false, 3, 3, 3, false,
           4096>(0, 0, 0, 0);
  checkMma<bfloat, 16, 128, 32, 64, false, 3, 3, 3, 64, false, 3, 3, 3, false,
           4096>(0, 64, 0, 0);
  checkMma<bfloat, 16, 128, 16, 64, false, 3, 3, 3, 64, false, 3, 3, 3, false,
           2048>(0, 3, 0, 1);
}

TEST(MmaEmulation, Bf16TransposedOperands) {
  checkMma<bfloat, 32, 64, 32, 32, true, 2, 3, 3, 32, true, 2, 3, 3>(0, 0, 0,
                                                                      0);
  checkMma<bfloat, 32, 32, 16, 64, true, 3, 3, 3, 16, true, 1, 3, 2>(0, 64, 0,
                                                                      0);
}

TEST(MmaEmulation, Bf16SubTileOffsetsAndStageBases) {
  // A warp's 32-row slice of a 128 x 32 stage (second stage at 4096), the
  // B columns 64.. of a 32 x 128 stage.
  checkMma<bfloat, 32, 64, 32, 32, false, 2, 3, 3, 128, false, 3, 3, 4>(
      4096, 32 * 32, 0, 64);
}

TEST(MmaEmulation, Bf16UnalignedOffsetsUseElementLoads) {
  checkMma<bfloat, 16, 32, 16, 24, false, 0, 0, 0, 40, false, 0, 0, 0>(0, 3,
                                                                        0, 5);
}

TEST(MmaEmulation, HalfOperands) {
  checkMma<half, 32, 32, 32, 32, false, 2, 3, 3, 32, true, 2, 3, 3>(0, 0, 0,
                                                                     0);
}

TEST(MmaEmulation, Tf32Operands) {
  // K-contiguous A and N x K B through ldmatrix, the others element-wise.
  checkMma<float, 32, 32, 16, 16, false, 2, 2, 2, 16, true, 2, 2, 2, true>(
      0, 0, 0, 0, 2e-3);
  checkMma<float, 16, 32, 8, 32, true, 0, 0, 0, 32, false, 0, 0, 0, true>(
      0, 0, 0, 0, 2e-3);
  checkMma<float, 16, 16, 8, 8, false, 0, 0, 0, 8, true, 0, 0, 0, true>(
      0, 1, 0, 0, 2e-3);
}

// K x N B under gemm_block's float swizzles: read through per-lane offsets
// worked out once per product (column offsets that are multiples of the
// fragment's width, rows past the first 8 of the swizzle's period, a
// second stage), and element-wise where the offset does not fit.
TEST(MmaEmulation, Tf32RowMajorSwizzledB) {
  checkMma<float, 64, 32, 32, 32, false, 3, 2, 3, 64, false, 3, 2, 4, true>(
      0, 0, 0, 0, 2e-3);
  checkMma<float, 32, 32, 32, 32, false, 3, 2, 3, 64, false, 3, 2, 4, true>(
      0, 0, 2048, 32, 2e-3);
  checkMma<float, 32, 64, 16, 16, false, 3, 2, 2, 128, false, 3, 2, 5, true>(
      0, 0, 0, 64, 2e-3);
  checkMma<float, 16, 32, 16, 16, false, 0, 0, 0, 64, false, 3, 2, 4, true>(
      0, 0, 0, 8, 2e-3);
  checkMma<float, 16, 16, 8, 8, false, 0, 0, 0, 24, false, 0, 0, 0, true>(
      0, 0, 0, 5, 2e-3);
}

TEST(MmaEmulation, Fp32FmaPaths) {
  // Vectorised (row-major A, N-contiguous B, aligned) and element-wise.
  checkMma<float, 32, 32, 16, 16, false, 2, 2, 2, 32, false, 3, 2, 3>(0, 0, 0,
                                                                       0);
  checkMma<float, 16, 32, 8, 16, true, 0, 0, 0, 8, true, 0, 0, 0>(0, 0, 0, 0);
  checkMma<float, 16, 16, 8, 8, false, 0, 0, 0, 16, false, 0, 0, 0>(0, 1, 0,
                                                                     3);
}

// A K x N float B in 32-column blocks 1024 elements apart under the
// 128-byte swizzle (the warp-specialised gemm_block's float stages), read
// at per-lane offsets block by block: FMA and TF32, a warp's columns
// spanning two blocks, one block, or half of one.
TEST(MmaEmulation, FloatBInColumnBlocks) {
  checkMma<float, 64, 64, 32, 32, false, 3, 2, 3, 32, false, 3, 2, 3, false,
           1024>(0, 0, 0, 0);
  checkMma<float, 32, 32, 32, 32, false, 3, 2, 3, 32, false, 3, 2, 3, false,
           1024>(0, 0, 0, 1024);
  checkMma<float, 32, 16, 16, 32, false, 3, 2, 3, 32, false, 3, 2, 3, false,
           1024>(0, 0, 0, 1040);
  checkMma<float, 64, 64, 32, 32, false, 3, 2, 3, 32, false, 3, 2, 3, true,
           1024>(0, 0, 0, 0, 2e-3);
  checkMma<float, 32, 16, 16, 32, false, 3, 2, 3, 32, false, 3, 2, 3, true,
           1024>(0, 0, 0, 1040, 2e-3);
}

TEST(MmaEmulation, RegisterOperandA) {
  // P (16 x 32, bfloat, from memory in the accumulator layout) times V.
  Arena arena;
  std::mt19937 rng(7);
  bfloat *p = arena.at<bfloat>(0), *v = arena.at<bfloat>(8192);
  StoredTile<bfloat> P{16, 32, 32, false, {0, 0, 0}, 0, 0, {}};
  StoredTile<bfloat> V{32, 64, 64, false, {3, 3, 3}, 0, 0, {}};
  P.fill(p, rng);
  V.fill(v, rng);
  float *c = arena.at<float>(24 * 1024);
  emu::runWarp([&](unsigned lane) {
    auto pf = enigma_mma_load<enigma_frag<bfloat, 16, 32>, false, false>(
        p, 0, 32, 0, 0, lane);
    auto acc = enigma_mma_fill<enigma_frag<float, 16, 64>>(0.0f);
    acc = enigma_mma_reg<64, false, 3, 3, 3, 0, false, false>(acc, pf, v, 0ull, 0ull, lane);
    enigma_mma_store<false, false>(acc, c, 0, 64, 0, 0, lane);
  });
  std::vector<double> want = product(P, V);
  for (int i = 0; i < 16 * 64; ++i)
    ASSERT_NEAR(c[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
}

TEST(MmaEmulation, HalvesOfWordsAsRegisterOperandA) {
  // enigma.mma_halves: 16 x 32 words (their halves 16 x 64 bfloat values,
  // placed by the documented rule) as the A operand of a product with V.
  Arena arena;
  std::mt19937 rng(11);
  bfloat *p = arena.at<bfloat>(0), *v = arena.at<bfloat>(8192);
  StoredTile<bfloat> P{16, 64, 64, false, {0, 0, 0}, 0, 0, {}};
  StoredTile<bfloat> V{64, 64, 64, false, {3, 3, 3}, 0, 0, {}};
  P.fill(p, rng);
  V.fill(v, rng);
  // Word (r, c), c = 8 b + 2 i + h, holds elements (r, j), (r, j + 1) of P,
  // j = 16 b + 8 h + 2 i.
  unsigned *words = arena.at<unsigned>(16 * 1024);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; ++c) {
      const int j = 16 * (c / 8) + 8 * (c % 2) + 2 * ((c % 8) / 2);
      words[r * 32 + c] = unsigned(enigma_mma::bits16(p[r * 64 + j])) |
                          unsigned(enigma_mma::bits16(p[r * 64 + j + 1])) << 16;
    }
  bfloat *halves = arena.at<bfloat>(20 * 1024);
  float *c = arena.at<float>(24 * 1024);
  emu::runWarp([&](unsigned lane) {
    auto w = enigma_mma_load<enigma_frag<unsigned, 16, 32>, false, false>(
        words, 0, 32, 0, 0, lane);
    auto a = enigma_mma_halves<enigma_frag<bfloat, 16, 64>>(w);
    enigma_mma_store<false, false>(a, halves, 0, 64, 0, 0, lane);
    auto acc = enigma_mma_fill<enigma_frag<float, 16, 64>>(0.0f);
    acc = enigma_mma_reg<64, false, 3, 3, 3, 0, false, false>(acc, a, v, 0ull,
                                                               0ull, lane);
    enigma_mma_store<false, false>(acc, c, 0, 64, 0, 0, lane);
  });
  for (int i = 0; i < 16 * 64; ++i)
    ASSERT_EQ(enigma_mma::bits16(halves[i]), enigma_mma::bits16(p[i])) << i;
  std::vector<double> want = product(P, V);
  for (int i = 0; i < 16 * 64; ++i)
    ASSERT_NEAR(c[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
}

TEST(MmaEmulation, LoadStoreBoundsTransposeIotaReduceBroadcast) {
  Arena arena;
  float *src = arena.at<float>(0), *dst = arena.at<float>(16 * 1024);
  for (int i = 0; i < 64 * 48; ++i)
    src[i] = float(i % 97) - 40.0f;
  src[3 * 48 + 5] = NAN; // a NaN among numbers is ignored by max / min
  for (int i = 0; i < 32 * 48; ++i)
    dst[i] = -1.0f;
  float rows[32 * 3];
  unsigned iota[2][32 * 32];
  emu::runWarp([&](unsigned lane) {
    typedef enigma_frag<float, 32, 32> F;
    // Transposed load: element (r, c) = src[c * 48 + r]; bounds 30 x 20.
    F f = enigma_mma_load<F, true, true>(src, 0, 48, 30, 20, lane);
    enigma_mma_store<false, true>(f, dst, 0, 48, 31, 32, lane);
    F g = enigma_mma_load<F, false, false>(src, 0, 48, 0, 0, lane);
    auto mx = enigma_mma_reduce_rows<1>(g);
    auto mn = enigma_mma_reduce_rows<2>(g);
    auto sm = enigma_mma_reduce_rows<0>(g);
    F b0 = enigma_mma_broadcast_rows<F>(mx);
    F b1 = enigma_mma_broadcast_rows<F>(mn);
    F b2 = enigma_mma_broadcast_rows<F>(sm);
    // Column 0 of each broadcast holds the row's value.
    for (int i = 0; i < F::size; ++i)
      if (enigma_mma::col_of<32>(i, lane) == 0) {
        int r = enigma_mma::row_of<32>(i, lane);
        rows[r] = b0.v[i], rows[32 + r] = b1.v[i], rows[64 + r] = b2.v[i];
      }
    typedef enigma_frag<unsigned, 32, 32> U;
    U ri = enigma_mma_iota<U, 0>(lane), ci = enigma_mma_iota<U, 1>(lane);
    enigma_mma_store<false, false>(ri, iota[0], 0, 32, 0, 0, lane);
    enigma_mma_store<false, false>(ci, iota[1], 0, 32, 0, 0, lane);
  });
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 48; ++c) {
      float want = -1.0f; // not written
      if (r < 31 && c < 32)
        want = (r < 30 && c < 20) ? src[c * 48 + r] : 0.0f;
      if (std::isnan(want))
        ASSERT_TRUE(std::isnan(dst[r * 48 + c]));
      else
        ASSERT_EQ(dst[r * 48 + c], want) << r << ", " << c;
    }
  for (int r = 0; r < 32; ++r) {
    double mx = -INFINITY, mn = INFINITY, sm = 0;
    for (int c = 0; c < 32; ++c) {
      float x = src[r * 48 + c];
      if (!std::isnan(x))
        mx = std::max<double>(mx, x), mn = std::min<double>(mn, x);
      sm += x;
    }
    EXPECT_EQ(rows[r], mx) << r;
    EXPECT_EQ(rows[32 + r], mn) << r;
    if (std::isnan(sm))
      EXPECT_TRUE(std::isnan(rows[64 + r])) << r;
    else
      EXPECT_NEAR(rows[64 + r], sm, 1e-4) << r;
  }
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) {
      EXPECT_EQ(iota[0][r * 32 + c], unsigned(r));
      EXPECT_EQ(iota[1][r * 32 + c], unsigned(c));
    }
}

TEST(MmaEmulation, TileCopySwizzleEdgesAndUnalignedSource) {
  std::vector<float> buf(80 * 40);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = float(i) + 0.25f;
  // Aligned; an odd source start; a destination base inside a chunk.
  for (int variant : {0, 1, 2}) {
    Arena arena;
    float *dst = arena.at<float>(1024);
    const float *src = buf.data() + (variant == 1 ? 1 : 0);
    const u64 base = variant == 2 ? 66 : 64;
    // 24 x 32 tile from rows of 40; valid 20 x 30.
    emu::runWarp([&](unsigned lane) {
      enigma_copy_tile_async<24, 32, 32, 3, 2, 3>(dst, base, src, 2 * 40, 40,
                                                 20, 30, lane, 32);
    });
    for (int r = 0; r < 24; ++r)
      for (int c = 0; c < 32; ++c) {
        float want = (r < 20 && c < 30) ? src[(2 + r) * 40 + c] : 0.0f;
        ASSERT_EQ(dst[base + swizzle(3, 2, 3, u64(r) * 32 + c)], want)
            << "variant " << variant << ": " << r << ", " << c;
      }
  }
}

// 16-bit fragments with 16-byte aligned rows are stored 16 bytes per lane
// after a transpose inside each quad; bounds that cut the fragment, an odd
// pitch or a start inside a chunk take the pair stores.
TEST(MmaEmulation, SixteenBitFragmentStores) {
  struct Case {
    u64 off, ld, rows, cols;
    bool bounded;
  };
  for (const Case &k : {Case{0, 64, 0, 0, false}, Case{8, 72, 0, 0, false},
                        Case{16, 64, 32, 64, true}, Case{0, 64, 20, 50, true},
                        Case{3, 67, 0, 0, false}}) {
    std::vector<bfloat> out(64 * 80, bfloat(-7.0f));
    emu::runWarp([&](unsigned lane) {
      auto f = enigma_mma_iota<enigma_frag<unsigned, 32, 64>, 0>(lane);
      auto c = enigma_mma_iota<enigma_frag<unsigned, 32, 64>, 1>(lane);
      enigma_frag<bfloat, 32, 64> v;
      for (int i = 0; i < v.size; ++i)
        v.v[i] = bfloat(float(f.v[i] * 64 + c.v[i]));
      if (k.bounded)
        enigma_mma_store<false, true>(v, out.data(), k.off, k.ld, k.rows,
                                      k.cols, lane);
      else
        enigma_mma_store<false, false>(v, out.data(), k.off, k.ld, 0, 0,
                                       lane);
    });
    for (u64 r = 0; r < 32; ++r)
      for (u64 c = 0; c < 64; ++c) {
        bool in = !k.bounded || (r < k.rows && c < k.cols);
        float want = in ? float(bfloat(float(r * 64 + c))) : -7.0f;
        ASSERT_EQ(float(out[k.off + r * k.ld + c]), want)
            << "off " << k.off << " ld " << k.ld << ": " << r << ", " << c;
      }
  }
}

// Whole tiles copied by 128 or 256 threads take the unrolled path: each
// thread's chunks a constant stride apart (periodic swizzle), or swizzled
// one by one, or fewer rows than one step of the threads.
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2>
void checkWholeTile(unsigned threads) {
  std::vector<float> buf(200 * 72);
  for (size_t i = 0; i < buf.size(); ++i)
    buf[i] = float(i) + 0.5f;
  Arena arena;
  float *dst = arena.at<float>(1024);
  const u64 base = 32;
  for (unsigned tid = 0; tid < threads; ++tid)
    enigma_copy_tile_async<Rows, Cols, DstLd, S0, S1, S2>(
        dst, base, buf.data(), 3 * 72 + 4, 72, Rows, Cols, tid, threads);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c)
      ASSERT_EQ(dst[base + swizzle(S0, S1, S2, u64(r) * DstLd + c)],
                buf[(3 + r) * 72 + 4 + c])
          << threads << " threads: " << r << ", " << c;
}

TEST(MmaEmulation, WholeTileCopiesByGemmThreadCounts) {
  for (unsigned threads : {128u, 256u, 512u}) {
    checkWholeTile<64, 32, 32, 3, 2, 3>(threads);  // periodic
    checkWholeTile<48, 32, 40, 0, 0, 0>(threads);  // no swizzle, padded rows
    checkWholeTile<24, 32, 32, 3, 2, 4>(threads);  // rows < one step
    checkWholeTile<40, 64, 64, 3, 2, 6>(threads);  // not periodic, ragged
  }
}

TEST(MmaEmulation, SimdgroupHalfMatricesOnTensorCores) {
  // The simdgroup 8x8 layout: lane l holds row l / 4, columns 2 (l % 4) and
  // the next. d = a * b + c, rounded once to half.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dist(-16, 16);
  float a[64], b[64], c[64], d[64];
  for (int i = 0; i < 64; ++i)
    a[i] = dist(rng) / 8.0f, b[i] = dist(rng) / 8.0f, c[i] = dist(rng) / 4.0f;
  emu::runWarp([&](unsigned lane) {
    int at = int(lane / 4) * 8 + int(lane % 4) * 2;
    half dx, dy;
    enigma_mma::half_mma88(half(a[at]), half(a[at + 1]), half(b[at]),
                           half(b[at + 1]), half(c[at]), half(c[at + 1]), dx,
                           dy);
    d[at] = float(dx), d[at + 1] = float(dy);
  });
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 8; ++col) {
      double s = c[r * 8 + col];
      for (int k = 0; k < 8; ++k)
        s += double(a[r * 8 + k]) * b[k * 8 + col];
      EXPECT_EQ(d[r * 8 + col], float(half(float(s)))) << r << ", " << col;
    }
}

} // namespace
