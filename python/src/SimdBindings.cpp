//===- SimdBindings.cpp -------------------------------------------------===//
//
// enigma._core.simd_call(builder, metal_name, value[, lane]): the simd and
// quad functions by Metal name (python/enigma/_simd.py wraps them).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Simd.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {
void checkBuilder(KernelBuilder &b, const Value &v, const std::string &name) {
  if (!v.valid() || v.builder() != &b)
    throw EnigmaError(name + ": the value belongs to another kernel");
}
} // namespace

void bindSimds(nb::module_ &m) {
  m.def(
      "simd_call",
      [](KernelBuilder &b, const std::string &name, Value v) {
        checkBuilder(b, v, name);
        return simdGroupCall(name, v);
      },
      "builder"_a, "name"_a, "value"_a,
      "A simd_* / quad_* reduction or scan by its Metal name.");
  m.def(
      "simd_call",
      [](KernelBuilder &b, const std::string &name, Value v, Value lane) {
        checkBuilder(b, v, name);
        return simdGroupCall(name, v, lane);
      },
      "builder"_a, "name"_a, "value"_a, "lane"_a,
      "A simd_* / quad_* shuffle or broadcast by its Metal name.");
}
} // namespace enigma::python
