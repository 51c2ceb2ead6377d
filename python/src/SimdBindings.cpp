//===- SimdBindings.cpp -------------------------------------------------===//
//
// Simdgroup matrices (python/enigma/_simd.py). The simd_* / quad_*
// functions are table functions (MathBindings.cpp's call_function).
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
template <typename Mem> void bindSimdgroupMatrixMemory(nb::module_ &m) {
  m.def(
      "simd_matrix_load",
      [](KernelBuilder &b, const Mem &mem, Value epr, Value offset,
         const std::string &elem, int rows, int cols, bool transpose) {
        return simdgroupMatrixLoad(b, mem, epr, offset, dtypeNamed(elem), rows,
                                   cols, transpose)
            .value;
      },
      "builder"_a, "mem"_a, "elements_per_row"_a, "offset"_a, "elem"_a,
      "rows"_a, "cols"_a, "transpose"_a = false);
  m.def(
      "simd_matrix_store",
      [](KernelBuilder &b, Value v, const std::string &elem, const Mem &mem,
         Value epr, Value offset) {
        checkBuilder(b, v, "simdgroup_matrix_store");
        simdgroupMatrixStore({v, dtypeNamed(elem)}, mem, epr, offset);
      },
      "builder"_a, "value"_a, "elem"_a, "mem"_a, "elements_per_row"_a,
      "offset"_a);
}
} // namespace

void bindSimd(nb::module_ &m) {
  // Simdgroup matrices: a matrix crosses into Python as its per-lane Value
  // (a 2-element vector) plus the element dtype's short name.
  bindSimdgroupMatrixMemory<Buffer>(m);
  bindSimdgroupMatrixMemory<ThreadgroupArray>(m);
  m.def(
      "simd_matrix_mma",
      [](KernelBuilder &b, Value a, Value bm, Value c, const std::string &elem) {
        checkBuilder(b, a, "simdgroup_multiply_accumulate");
        DType t = dtypeNamed(elem);
        return simdgroupMultiplyAccumulate({a, t}, {bm, t}, {c, t}).value;
      },
      "builder"_a, "a"_a, "b"_a, "c"_a, "elem"_a);
  m.def(
      "simd_matrix_fill",
      [](KernelBuilder &b, Value v, const std::string &elem, int rows,
         int cols) {
        checkBuilder(b, v, "make_filled_simdgroup_matrix");
        return makeFilledSimdgroupMatrix(v, dtypeNamed(elem), rows, cols).value;
      },
      "builder"_a, "value"_a, "elem"_a, "rows"_a, "cols"_a);
  m.def(
      "simd_matrix_check_shape",
      [](const std::string &elem, int rows, int cols) {
        checkSimdgroupMatrixShape(dtypeNamed(elem), rows, cols);
      },
      "elem"_a, "rows"_a, "cols"_a);
}
} // namespace enigma::python
