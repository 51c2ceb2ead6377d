//===- Float8.h - Host conversions of the 8-bit floats ----------*- C++ -*-===//
//
// The conversions of the 8-bit floats (docs/design/fp8.md) for host code
// (scalar parameters, the Python helpers enigma.fp8_encode / fp8_decode):
// the same definitions kernels use, metal_fp8.h of the semantics library,
// compiled here for the host.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_FLOAT8_H
#define ENIGMA_SUPPORT_FLOAT8_H

#include "enigma/Support/DType.h"

#include <cstddef>
#include <cstdint>

namespace enigma {

/// `x` rounded to nearest even in `format` (F8E4M3 or F8E5M2); beyond the
/// largest finite value NaN (e4m3) / infinity (e5m2), or with `saturate`
/// the largest finite value.
uint8_t floatToFloat8(float x, DType format, bool saturate = false);
/// The value of the 8-bit pattern `bits` of `format`.
float float8ToFloat(uint8_t bits, DType format);

/// The same over arrays of `n` elements.
void floatsToFloat8(const float *in, uint8_t *out, size_t n, DType format,
                    bool saturate);
void float8ToFloats(const uint8_t *in, float *out, size_t n, DType format);

} // namespace enigma

#endif
