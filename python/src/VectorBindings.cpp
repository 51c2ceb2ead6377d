//===- VectorBindings.cpp - The vectors family ------------------------------===//
//
// Module-level functions taking the KernelBuilder first, so this file needs
// nothing from BuilderBindings.cpp beyond the bound classes.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Vectors.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {

DType dtypeNamed(const std::string &name) {
  if (auto t = parseDType(name))
    return *t;
  throw EnigmaError("unknown dtype '" + name + "'");
}

PackFormat packFormat(const std::string &name) {
  static const std::map<std::string, PackFormat> formats = {
      {"snorm4x8", PackFormat::Snorm4x8},
      {"unorm4x8", PackFormat::Unorm4x8},
      {"snorm2x16", PackFormat::Snorm2x16},
      {"unorm2x16", PackFormat::Unorm2x16},
      {"srgb_unorm4x8", PackFormat::Srgb4x8},
      {"unorm10a2", PackFormat::Unorm10a2},
  };
  auto it = formats.find(name);
  if (it == formats.end())
    throw EnigmaError("unknown pack format '" + name + "'");
  return it->second;
}

} // namespace

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
  m.def("dot", [](KernelBuilder &k, Value a, Value b) { return dot(k, a, b); });
  m.def("length", [](KernelBuilder &k, Value v) { return length(k, v); });
  m.def("distance",
        [](KernelBuilder &k, Value a, Value b) { return distance(k, a, b); });
  m.def("normalize", [](KernelBuilder &k, Value v) { return normalize(k, v); });
  m.def("cross",
        [](KernelBuilder &k, Value a, Value b) { return cross(k, a, b); });
  m.def("reflect",
        [](KernelBuilder &k, Value i, Value n) { return reflect(k, i, n); });
  m.def("refract", [](KernelBuilder &k, Value i, Value n, Value eta) {
    return refract(k, i, n, eta);
  });
  m.def("faceforward", [](KernelBuilder &k, Value n, Value i, Value nref) {
    return faceforward(k, n, i, nref);
  });
  m.def("pack_lanes",
        [](const std::string &format) { return packLanes(packFormat(format)); });
  m.def("pack_float", [](KernelBuilder &k, const std::string &format, Value v) {
    return packFloat(k, packFormat(format), v);
  });
  m.def("unpack_to_float",
        [](KernelBuilder &k, const std::string &format, Value u) {
          return unpackToFloat(k, packFormat(format), u);
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
