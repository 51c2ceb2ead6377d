//===- MetalHostBindings.cpp - The MSL host runtime -----------------------===//
//
// Adds `Runtime.metal_host()` to the Runtime class bound by
// RuntimeBindings.cpp (so bindRuntime must run first), and the two helpers
// python/enigma/_metal_host.py builds hand-written Metal kernels with.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#ifdef __linux__
#include "enigma/Runtime/MetalHostBackend.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {

void bindMetalHostRuntime(nb::module_ &m) {
#ifndef __linux__
  (void)m; // the runtime is built on Linux only
#else
  nb::object runtime = m.attr("Runtime");
  // What class_::def_static does, on a class bound elsewhere.
  nb::cpp_function_def(
      [] { return makeRuntime(std::make_shared<MetalHostBackend>()); },
      nb::scope(runtime), nb::name("metal_host"),
      "A runtime that compiles each kernel's Metal source with clang++ "
      "against the host metal_stdlib and runs it with Metal's execution "
      "model on the CPU.");
  m.def(
      "msl_host_artifact",
      [](const std::string &source, const std::string &kernelName,
         const std::vector<unsigned> &definedConstants) {
        std::vector<bool> bytesParams;
        KernelArtifact artifact = MetalHostBackend::artifactForSource(
            source, kernelName, definedConstants, &bytesParams);
        return std::make_pair(std::move(artifact), bytesParams);
      },
      "source"_a, "kernel_name"_a, "defined_constants"_a,
      "(artifact, bytes_params): a hand-written Metal kernel's artifact "
      "(parameters in [[buffer(n)]] order) and which parameters are bytes "
      "(u8) because their type is not a Metal scalar or vector.");
  m.def(
      "msl_host_check",
      [](const std::string &source, const std::string &fileName) {
        MetalHostBackend backend;
        ReleasedGil release;
        backend.checkSource(source, fileName);
      },
      "source"_a, "file_name"_a,
      "Checks that every kernel of a Metal source can run on the MSL host "
      "runtime and that the source compiles; raises EnigmaRuntimeError "
      "with the compiler's messages otherwise.");
#endif
}

} // namespace enigma::python
