//===- enigma_cpu_integer_division.h - Total integer / and % ----*- C++ -*-===//
//
// Integer division and remainder of CPU kernels. C leaves two cases
// undefined and x86 traps on both (SIGFPE); a GPU returns some value and
// goes on, and kernels rely on that when they compute a quotient in every
// lane and discard it where the divisor is zero (`where(0, a / b, b != 0)`).
// Here both cases have the values NVIDIA GPUs give:
//   a / 0 and a % 0: every bit set (UINT_MAX, or -1 for a signed type);
//   MIN / -1 of a signed type: MIN (the quotient wraps); MIN % -1: 0.
// Metal leaves them undefined (docs/language.md). Each check is a branch
// that predicts perfectly in real kernels; the division itself is a scalar
// instruction on x86 whether checked or not.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_INTEGER_DIVISION_H
#define ENIGMA_CPU_INTEGER_DIVISION_H

template <class T> static inline T enigma_div(T a, T b) {
  if (__builtin_expect(b == T(0), 0))
    return T(~T(0));
  if constexpr (T(-1) < T(0)) {
    if (__builtin_expect(b == T(-1), 0)) // -a, wrapping at MIN
      return T(0ull - (unsigned long long)a);
  }
  return T(a / b);
}

template <class T> static inline T enigma_rem(T a, T b) {
  if (__builtin_expect(b == T(0), 0))
    return T(~T(0));
  if constexpr (T(-1) < T(0)) {
    if (__builtin_expect(b == T(-1), 0))
      return T(0);
  }
  return T(a % b);
}

template <class T, int N>
static inline metal::vec<T, N> enigma_div(metal::vec<T, N> a,
                                          metal::vec<T, N> b) {
  metal::vec<T, N> quotient;
  for (int i = 0; i < N; ++i)
    quotient[i] = enigma_div(a[i], b[i]);
  return quotient;
}

template <class T, int N>
static inline metal::vec<T, N> enigma_rem(metal::vec<T, N> a,
                                          metal::vec<T, N> b) {
  metal::vec<T, N> remainder;
  for (int i = 0; i < N; ++i)
    remainder[i] = enigma_rem(a[i], b[i]);
  return remainder;
}

#endif // ENIGMA_CPU_INTEGER_DIVISION_H
