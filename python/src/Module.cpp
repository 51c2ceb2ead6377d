//===- Module.cpp - enigma._core ------------------------------------------===//
//
// C++ exceptions become Python exceptions here: EnigmaError for mistakes in
// kernels, DispatchError (a ValueError) for bad dispatch arguments,
// BackendUnavailableError and EnigmaRuntimeError (RuntimeErrors) for
// toolchains and devices, KernelFaultError for kernels that faulted.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Runtime/Backend.h"
#include "enigma/Runtime/BoundsCheck.h"
#include "enigma/Support/Error.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "Enigma's C++ core: the tracing builder, compiler and runtimes";
  auto enigmaError = nb::exception<enigma::EnigmaError>(m, "EnigmaError");
  enigmaError.attr("__doc__") =
      "A mistake in a kernel or in the use of the API, found while tracing "
      "or compiling; the message starts with the user's file:line.";
  auto runtimeError = nb::exception<enigma::RuntimeFailure>(
      m, "EnigmaRuntimeError", PyExc_RuntimeError);
  runtimeError.attr("__doc__") =
      "A failure of a runtime while preparing or running a kernel "
      "(a RuntimeError).";
  // Dispatch failures are RuntimeErrors (docs/reference/runtimes.md) and,
  // being about the caller's arguments, ValueErrors too.
  nb::object dispatchBases = nb::make_tuple(runtimeError, nb::handle(PyExc_ValueError));
  auto dispatchError =
      nb::exception<enigma::DispatchError>(m, "DispatchError", dispatchBases);
  dispatchError.attr("__doc__") =
      "Dispatch arguments that do not fit the kernel (inputs, sizes, "
      "scalars, grid, threads), raised before the launch; an "
      "EnigmaRuntimeError and a ValueError.";
  auto unavailable = nb::exception<enigma::BackendUnavailable>(
      m, "BackendUnavailableError", runtimeError);
  unavailable.attr("__doc__") =
      "The backend cannot run here: no driver, device or compiler for it.";
  auto bounds = nb::exception<enigma::BoundsViolation>(m, "BoundsCheckError",
                                                       runtimeError);
  bounds.attr("__doc__") =
      "A bounds-checked kernel accessed memory out of bounds: the message "
      "names the buffer, index, size, thread and source line of the first "
      "violation and how many there were.";
  auto fault = nb::exception<enigma::KernelFault>(m, "KernelFaultError",
                                                  runtimeError);
  fault.attr("__doc__") =
      "A kernel faulted while running: an invalid memory access or a "
      "trapping instruction on the CPU, an illegal address on a GPU. The "
      "message names the kernel and, where the dispatch could be run again "
      "in bounds-checked mode, the out-of-bounds access with its file:line. "
      "The runtime stays usable (on CUDA its context was reset: device "
      "buffers made before the fault are gone). An EnigmaRuntimeError.";
  enigma::python::bindBuilder(m);
  enigma::python::bindRuntime(m);
  enigma::python::bindLaunch(m);
  enigma::python::bindHostNumbers(m);
  enigma::python::bindMetalRuntime(m);
  enigma::python::bindMetalHostRuntime(m);
  enigma::python::bindMath(m);
  enigma::python::bindVectors(m);
  enigma::python::bindCooperation(m);
  enigma::python::bindSimd(m);
  enigma::python::bindControl(m);
  enigma::python::bindAsyncCopy(m);
  enigma::python::bindLayout(m);
  enigma::python::bindTensor(m);
  enigma::python::bindMma(m);
  enigma::python::bindPipeline(m);
}
