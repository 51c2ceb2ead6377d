//===- Float8Bindings.cpp - The 8-bit float family ------------------------===//
//
// The saturating conversion of kernels, and host conversions of arrays
// (enigma.fp8_encode / fp8_decode) through the semantics library's
// definitions (include/enigma/Support/Float8.h).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Float8.h"
#include "enigma/Support/Error.h"
#include "enigma/Support/Float8.h"

#include <nanobind/stl/string.h>

#include <string>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {
DType float8Named(const std::string &name) {
  DType t = dtypeNamed(name);
  if (!isFloat8(t))
    throw EnigmaError("expected an 8-bit float dtype (f8e4m3 or f8e5m2), "
                      "got " + std::string(shortName(t)));
  return t;
}
} // namespace

void bindFloat8(nb::module_ &m) {
  m.def(
      "saturating_cast",
      [](KernelBuilder &k, Value x, const std::string &dtype) {
        return saturatingCast(k, x, dtypeNamed(dtype));
      },
      "builder"_a, "value"_a, "dtype"_a);
  m.def(
      "fp8_encode",
      [](nb::bytes floats, const std::string &dtype, bool saturate) {
        DType t = float8Named(dtype);
        size_t n = floats.size() / sizeof(float);
        std::string out(n, '\0');
        floatsToFloat8(reinterpret_cast<const float *>(floats.c_str()),
                       reinterpret_cast<uint8_t *>(out.data()), n, t,
                       saturate);
        return nb::bytes(out.data(), out.size());
      },
      "floats"_a, "dtype"_a, "saturate"_a,
      "bytes of float32 values -> bytes of 8-bit patterns");
  m.def(
      "fp8_decode",
      [](nb::bytes bits, const std::string &dtype) {
        DType t = float8Named(dtype);
        size_t n = bits.size();
        std::string out(n * sizeof(float), '\0');
        float8ToFloats(reinterpret_cast<const uint8_t *>(bits.c_str()),
                       reinterpret_cast<float *>(out.data()), n, t);
        return nb::bytes(out.data(), out.size());
      },
      "bits"_a, "dtype"_a, "bytes of 8-bit patterns -> bytes of float32");
}
} // namespace enigma::python
