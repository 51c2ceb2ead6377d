//===- MetalBindings.cpp - Runtime.metal on Apple platforms ---------------===//
//
// Adds the static factory `Runtime.metal(dylib_path=None)` to the Runtime
// class bound by RuntimeBindings.cpp (so bindRuntime must run first).
// `dylib_path` names a compiled .metallib; None or "" compiles each kernel's
// MSL at run time. Elsewhere nothing is added, and enigma.MetalRuntime
// reports that this build has no Metal backend.
//
// NOT YET COMPILED ON APPLE: written on Linux (docs/design/metal-backend.md).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#ifdef __APPLE__
#include "enigma/Runtime/MetalBackend.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <optional>
#include <string>
#endif

namespace nb = nanobind;

namespace enigma::python {

void bindMetalRuntime(nb::module_ &m) {
#ifdef __APPLE__
  using namespace nb::literals;
  nb::object runtime = m.attr("Runtime");
  // What class_::def_static does, on a class bound elsewhere.
  nb::cpp_function_def(
      [](const std::optional<std::string> &dylibPath) {
        return makeRuntime(
            std::make_shared<MetalBackend>(dylibPath.value_or("")));
      },
      nb::scope(runtime), nb::name("metal"), "dylib_path"_a = nb::none(),
      "A runtime on the default Metal device. dylib_path: a compiled "
      ".metallib to take kernels from (None: compile each kernel's MSL at "
      "run time).");
#else
  (void)m;
#endif
}

} // namespace enigma::python
