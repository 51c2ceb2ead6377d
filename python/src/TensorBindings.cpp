//===- TensorBindings.cpp - What enigma.Tensor needs from the core --------===//
//
// Vector loads and stores of scalar memory (include/enigma/Builder/
// VectorMemory.h), used by Tensor.load() / Tensor.store() in
// python/enigma/_tensor.py. Module-level functions taking the builder first;
// each is overloaded for buffers and threadgroup arrays.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/VectorMemory.h"

namespace nb = nanobind;

namespace enigma::python {
namespace {

template <typename Mem> void bindVectorMemory(nb::module_ &m) {
  m.def(
      "vector_load",
      [](KernelBuilder &k, const Mem &mem, Value index, unsigned lanes) {
        return vectorLoad(k, mem, index, lanes);
      },
      "Elements index..index+lanes-1 of scalar memory as one vector");
  m.def(
      "vector_store",
      [](KernelBuilder &k, const Mem &mem, Value index, Value value) {
        vectorStore(k, mem, index, value);
      },
      "Writes a 2- or 4-lane vector to elements index..index+lanes-1");
}

} // namespace

void bindTensor(nb::module_ &m) {
  bindVectorMemory<Buffer>(m);
  bindVectorMemory<ThreadgroupArray>(m);
  m.def(
      "known_power_of_two_divisor",
      [](KernelBuilder &k, Value v) { return knownPowerOfTwoDivisor(k, v); },
      "The largest power of two an integer value is known to be a multiple "
      "of (1 when unknown)");
}

} // namespace enigma::python
