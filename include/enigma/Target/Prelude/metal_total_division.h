//===- metal_total_division.h - Integer / and % on every target -*- C++ -*-===//
//
// Integer division and remainder of Enigma kernels, the same on every
// target. Metal leaves two cases undefined (a zero divisor, and MIN / -1 of
// a signed type); x86 traps on both and optimisers may assume they never
// happen, so a kernel that divides in every lane and discards the lanes
// whose divisor is zero (`where(0, a / b, b != 0)`) must never reach them.
// Enigma defines them as RISC-V does, which is also what NVIDIA GPUs give
// for 32-bit integers:
//   a / 0 = every bit set (the unsigned maximum, or -1);  a % 0 = a;
//   MIN / -1 = MIN (the negation wraps);                  MIN % -1 = 0.
// The divisor is replaced by 1 where a case is special and the result is
// selected afterwards, per lane, without branches.
//
// This file is written in the subset of C++ that is also Metal Shading
// Language: it is included by the CPU and CUDA preludes (after
// `using namespace metal`) and printed into MSL that divides integers,
// with METAL_FUNC spelled `inline` (lib/Target/CFamily/CFamilyEmitter.cpp).
// T is a scalar or vector integer type; U its unsigned counterpart.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_TOTAL_DIVISION_H
#define ENIGMA_METAL_TOTAL_DIVISION_H

template <typename T>
METAL_FUNC T enigma_udiv(T a, T b) {
  T d = select(b, T(1), b == T(0));
  return select(T(a / d), T(~T(0)), b == T(0));
}

template <typename T>
METAL_FUNC T enigma_urem(T a, T b) {
  T d = select(b, T(1), b == T(0));
  return select(T(a % d), a, b == T(0));
}

template <typename T, typename U>
METAL_FUNC T enigma_sdiv(T a, T b) {
  T d = select(b, T(1), (b == T(0)) | (b == T(-1)));
  T q = select(T(a / d), T(U(0) - U(a)), b == T(-1));
  return select(q, T(-1), b == T(0));
}

template <typename T, typename U>
METAL_FUNC T enigma_srem(T a, T b) {
  // a % 1 is 0, which is also the remainder of every a / -1.
  T d = select(b, T(1), (b == T(0)) | (b == T(-1)));
  return select(T(a % d), a, b == T(0));
}

#endif // ENIGMA_METAL_TOTAL_DIVISION_H
