//===- enigma_cpu_mma_fp8.h - Products of 8-bit float tiles ----*- C++ -*-===//
//
// enigma.mma with 8-bit float tiles on the CPU (docs/design/fp8.md): each
// element decoded exactly by the semantics library (metal_fp8.h), then the
// float fma chain of enigma_mma_sync. A product of two 8-bit values is
// exact in float, so each step rounds only the sum.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_MMA_FP8_H
#define ENIGMA_CPU_MMA_FP8_H

namespace enigma_mma {
// Element (r, c) of an 8-bit tile of format Fmt (0 e4m3, 1 e5m2), as a
// float; the addressing is tile()'s.
template <int Fmt, int Ld, bool Trans, int S0, int S1, int S2, int Bs>
inline float tile8(const unsigned char *p, u64 base, u64 off, u64 r, u64 c) {
  return enigma_fp8_to_float<Fmt>(
      p[base + swz<S0, S1, S2>(off + (Trans ? stored<Ld, Bs>(c, r)
                                            : stored<Ld, Bs>(r, c)))]);
}
} // namespace enigma_mma

template <int AFmt, int BFmt, int K, int ALd, bool ATr, int AS0, int AS1,
          int AS2, int ABs, int BLd, bool BTr, int BS0, int BS1, int BS2,
          int BBs, bool Tf32, bool Wg, bool Async, bool ZeroAcc = false,
          int M, int N>
inline enigma_frag<float, M, N>
enigma_mma_fp8(enigma_frag<float, M, N> acc, const unsigned char *a,
               uint64_t a_base, uint64_t a_off, const unsigned char *b,
               uint64_t b_base, uint64_t b_off, uint32_t lane) {
  using namespace enigma_mma;
  for (int j = 0; j < enigma_frag<float, M, N>::lane_rows; ++j) {
    const u64 r = lane + 32u * u64(j);
    if (r >= u64(M))
      break;
    for (int c = 0; c < N; ++c) {
      float s = acc.v[j * N + c];
      for (int k = 0; k < K; ++k)
        s = fma(tile8<AFmt, ALd, ATr, AS0, AS1, AS2, ABs>(a, a_base, a_off,
                                                          r, k),
                tile8<BFmt, BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off,
                                                          k, c),
                s);
      acc.v[j * N + c] = s;
    }
  }
  return acc;
}

#endif // ENIGMA_CPU_MMA_FP8_H
