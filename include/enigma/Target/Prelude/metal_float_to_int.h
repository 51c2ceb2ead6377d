//===- metal_float_to_int.h - Float -> integer on every target --*- C++ -*-===//
//
// The conversion of a float (float, half, bfloat; scalar or vector) to an
// integer type in Enigma kernels, the same on every target. Metal defines
// only the rounding, toward zero, and converts "with no saturation": NaN and
// values outside the integer type's range are left undefined (LLVM's fptosi
// gives poison; x86 gives 0x80..0 or wraps, NVIDIA GPUs saturate). Enigma
// defines them as NVIDIA GPUs, Direct3D, Rust's `as` and LLVM's
// fptosi.sat do:
//   NaN -> 0;  below the range -> the minimum;  above it -> the maximum;
// everything else is truncated toward zero. The checks are selects on the
// value, so the code stays branch-free and vectorises.
//
// Written in the subset of C++ that is also Metal Shading Language, like
// metal_total_division.h: included by the CPU and CUDA preludes (after
// `using namespace metal`) and printed into MSL that converts, with
// METAL_FUNC spelled `inline` (lib/Target/CFamily/CFamilyEmitter.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_FLOAT_TO_INT_H
#define ENIGMA_METAL_FLOAT_TO_INT_H

// For each integer type I (as the emitters spell it): the floats [low,
// high) whose truncation fits I, and I's ends. low and high are 0 or powers
// of two, exact in every float type.
template <typename I> struct enigma_int_range;
template <> struct enigma_int_range<char> {
  static METAL_FUNC float low() { return -128.0f; }
  static METAL_FUNC float high() { return 128.0f; }
  static METAL_FUNC char lowest() { return char(-128); }
  static METAL_FUNC char highest() { return char(127); }
};
template <> struct enigma_int_range<uchar> {
  static METAL_FUNC float low() { return 0.0f; }
  static METAL_FUNC float high() { return 256.0f; }
  static METAL_FUNC uchar lowest() { return uchar(0); }
  static METAL_FUNC uchar highest() { return uchar(255); }
};
template <> struct enigma_int_range<short> {
  static METAL_FUNC float low() { return -32768.0f; }
  static METAL_FUNC float high() { return 32768.0f; }
  static METAL_FUNC short lowest() { return short(-32768); }
  static METAL_FUNC short highest() { return short(32767); }
};
template <> struct enigma_int_range<ushort> {
  static METAL_FUNC float low() { return 0.0f; }
  static METAL_FUNC float high() { return 65536.0f; }
  static METAL_FUNC ushort lowest() { return ushort(0); }
  static METAL_FUNC ushort highest() { return ushort(65535); }
};
template <> struct enigma_int_range<int> {
  static METAL_FUNC float low() { return -2147483648.0f; }
  static METAL_FUNC float high() { return 2147483648.0f; }
  static METAL_FUNC int lowest() { return int(~(~uint(0) >> 1)); }
  static METAL_FUNC int highest() { return int(~uint(0) >> 1); }
};
template <> struct enigma_int_range<uint> {
  static METAL_FUNC float low() { return 0.0f; }
  static METAL_FUNC float high() { return 4294967296.0f; }
  static METAL_FUNC uint lowest() { return uint(0); }
  static METAL_FUNC uint highest() { return ~uint(0); }
};
template <> struct enigma_int_range<long> {
  static METAL_FUNC float low() { return -9223372036854775808.0f; }
  static METAL_FUNC float high() { return 9223372036854775808.0f; }
  static METAL_FUNC long lowest() { return long(~(~ulong(0) >> 1)); }
  static METAL_FUNC long highest() { return long(~ulong(0) >> 1); }
};
template <> struct enigma_int_range<ulong> {
  static METAL_FUNC float low() { return 0.0f; }
  static METAL_FUNC float high() { return 18446744073709551616.0f; }
  static METAL_FUNC ulong lowest() { return ulong(0); }
  static METAL_FUNC ulong highest() { return ~ulong(0); }
};

// x (float or a float vector; half and bfloat are widened first, exactly)
// converted to D, which is I or a vector of I.
template <typename I, typename D, typename X>
METAL_FUNC D enigma_float_to_int(X x) {
  typedef enigma_int_range<I> R;
  // A NaN is neither below nor above; it is replaced by 0 like the values
  // whose conversion the selects below replace.
  auto below = x <= X(R::low());
  auto above = x >= X(R::high());
  X inside = select(x, X(0.0f), x != x);
  inside = select(inside, X(0.0f), below);
  inside = select(inside, X(0.0f), above);
  D r = D(inside);
  r = select(r, D(R::lowest()), below);
  return select(r, D(R::highest()), above);
}

#endif // ENIGMA_METAL_FLOAT_TO_INT_H
