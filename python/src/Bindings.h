//===- Bindings.h - Pieces of the enigma._core module -----------*- C++ -*-===//
#ifndef ENIGMA_PYTHON_BINDINGS_H
#define ENIGMA_PYTHON_BINDINGS_H

#include <nanobind/nanobind.h>

#include "enigma/Runtime/Dispatch.h"
#include "enigma/Support/DType.h"

#include <memory>
#include <optional>
#include <string>

namespace enigma {
class Backend;
}

namespace enigma::python {
/// Releases the GIL for a long C++ call (a compile, a launch, a wait) and
/// takes it back, unless the interpreter is exiting: then a thread other
/// than the main one never returns to Python (ProcessLifeBindings.cpp).
class ReleasedGil {
public:
  ReleasedGil();
  ~ReleasedGil();
  ReleasedGil(const ReleasedGil &) = delete;
  ReleasedGil &operator=(const ReleasedGil &) = delete;

private:
  PyThreadState *state;
};
/// Ctrl-C and exit for long C++ calls, and _core.process_exiting.
void bindProcessLife(nanobind::module_ &m);
/// The dtype a name spells (f32, float, ...); an EnigmaError naming the
/// accepted spellings otherwise (BuilderBindings.cpp).
enigma::DType dtypeNamed(const std::string &name);
void bindBuilder(nanobind::module_ &m);
void bindRuntime(nanobind::module_ &m);
/// Runtime.metal(dylib_path) where Metal exists; nothing elsewhere.
void bindMetalRuntime(nanobind::module_ &m);
/// Runtime.metal_host() and the MSL host runtime's source helpers.
void bindMetalHostRuntime(nanobind::module_ &m);
/// A Python Runtime object over `backend` (for backends bound elsewhere).
nanobind::object makeRuntime(std::shared_ptr<enigma::Backend> backend);
/// The backend of a Python Runtime object (`enigma._core.Runtime`).
std::shared_ptr<enigma::Backend> backendOf(nanobind::handle runtime);
/// The function-call form (LaunchBindings.cpp; the call in LaunchCall.cpp).
void bindLaunch(nanobind::module_ &m);
/// `value` as a launch argument number (Python bool / int / float, numpy
/// bool_ / integer / floating scalar); nothing for any other object;
/// DispatchError for an integer past 64 bits (HostNumbers.cpp). Every path
/// that takes numbers from Python reads them with this.
std::optional<enigma::HostNumber> hostNumberOf(nanobind::handle value);
/// The name of `value`'s type as messages print it ("str", "NoneType").
std::string pythonTypeName(nanobind::handle value);
/// _core.pack_numbers and _core.host_number (HostNumbers.cpp).
void bindHostNumbers(nanobind::module_ &m);
// One per op family, each in its own file.
void bindMath(nanobind::module_ &m);
void bindVectors(nanobind::module_ &m);
void bindCooperation(nanobind::module_ &m);
void bindSimd(nanobind::module_ &m);
void bindControl(nanobind::module_ &m);
void bindAsyncCopy(nanobind::module_ &m);
/// The layout algebra (python/enigma/_layout.py and _layout_algebra.py are
/// its front).
void bindLayout(nanobind::module_ &m);
void bindTensor(nanobind::module_ &m);
/// Fragments, products and tile copies (python/enigma/_mma.py).
void bindMma(nanobind::module_ &m);
/// The 8-bit floats' saturating conversion and host conversions.
void bindFloat8(nanobind::module_ &m);
/// Pipeline rings, pipelines and stage copies (PipelineBindings.cpp).
void bindPipeline(nanobind::module_ &m);
} // namespace enigma::python

#endif
