//===- Float8.cpp - Host conversions of the 8-bit floats ------------------===//
//
// The semantics library compiled for the host: its metal_fp8.h is the one
// definition of the conversions, here as in every kernel.
//
//===----------------------------------------------------------------------===//
#include "enigma/Support/Float8.h"

#include "enigma/Target/Prelude/metal_semantics.h"

namespace enigma_host_fp8 {
using namespace metal;
#include "enigma/Target/Prelude/metal_fp8.h"
} // namespace enigma_host_fp8

namespace enigma {

uint8_t floatToFloat8(float x, DType format, bool saturate) {
  using namespace enigma_host_fp8;
  if (format == DType::F8E4M3)
    return saturate ? enigma_float_to_f8e4m3_sat(x) : enigma_float_to_f8e4m3(x);
  return saturate ? enigma_float_to_f8e5m2_sat(x) : enigma_float_to_f8e5m2(x);
}

float float8ToFloat(uint8_t bits, DType format) {
  using namespace enigma_host_fp8;
  return format == DType::F8E4M3 ? enigma_f8e4m3_to_float(bits)
                                 : enigma_f8e5m2_to_float(bits);
}

void floatsToFloat8(const float *in, uint8_t *out, size_t n, DType format,
                    bool saturate) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatToFloat8(in[i], format, saturate);
}

void float8ToFloats(const uint8_t *in, float *out, size_t n, DType format) {
  for (size_t i = 0; i < n; ++i)
    out[i] = float8ToFloat(in[i], format);
}

} // namespace enigma
