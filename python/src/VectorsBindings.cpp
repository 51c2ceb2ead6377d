//===- VectorsBindings.cpp - The vectors family -----------------------------===//
//
// Module-level functions taking the KernelBuilder first, so this file needs
// nothing from BuilderBindings.cpp beyond the bound classes. Geometry and
// packing are table functions (MathBindings.cpp's call_function).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Vectors.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
void bindVectors(nb::module_ &m) {
  m.def("value_lanes", [](const Value &v) { return v.lanes(); },
        "1 for a scalar, 2..4 for a vector");
  m.def("buffer_lanes", [](const Buffer &b) { return b.lanes(); });
  m.def(
      "add_vector_buffer",
      [](KernelBuilder &k, const std::string &name, const std::string &dtype,
         unsigned lanes) { return k.addBuffer(name, dtypeNamed(dtype), lanes); },
      "builder"_a, "name"_a, "dtype"_a, "lanes"_a);
  m.def("broadcast", [](KernelBuilder &k, Value v, unsigned lanes) {
    return k.broadcast(v, lanes);
  });
  m.def("make_vec", [](KernelBuilder &k, const std::vector<Value> &parts) {
    return makeVec(k, parts);
  });
  m.def("vec_extract", [](KernelBuilder &k, Value v, unsigned lane) {
    return vecExtract(k, v, lane);
  });
  m.def("pack_uint8x4",
        [](KernelBuilder &k, Value v) { return packUint8x4(k, v); });
  m.def("unpack_uint8x4",
        [](KernelBuilder &k, Value u) { return unpackUint8x4(k, u); });
  m.def("pack_int4x2",
        [](KernelBuilder &k, Value v) { return packInt4x2(k, v); });
  m.def("unpack_int4x2",
        [](KernelBuilder &k, Value u) { return unpackInt4x2(k, u); });
  m.def("dequantize_int8",
        [](KernelBuilder &k, Value x, Value scale, Value zeroPoint) {
          return dequantizeInt8(k, x, scale, zeroPoint);
        });
}

} // namespace enigma::python
