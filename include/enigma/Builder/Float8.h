//===- Float8.h - KernelBuilder calls of the 8-bit float family -*- C++ -*-===//
//
// The 8-bit floats (docs/design/fp8.md) convert with KernelBuilder::cast
// (round to nearest even; beyond the largest finite: NaN for e4m3,
// infinity for e5m2). This family adds the saturating conversion.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_FLOAT8_H
#define ENIGMA_BUILDER_FLOAT8_H

#include "enigma/Builder/KernelBuilder.h"

namespace enigma {

/// `x` (a number of any type, scalar or vector) converted to the 8-bit
/// float `to`, rounding to nearest even and clamping magnitudes beyond
/// the largest finite value (infinities too) to it; NaN stays NaN.
Value saturatingCast(KernelBuilder &k, Value x, DType to);

} // namespace enigma

#endif
