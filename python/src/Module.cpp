//===- Module.cpp - enigma._core ------------------------------------------===//
//
// C++ exceptions become Python exceptions here: EnigmaError for mistakes in
// kernels, DispatchError (a ValueError) for bad dispatch arguments,
// BackendUnavailableError and EnigmaRuntimeError (RuntimeErrors) for
// toolchains and devices.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Runtime/Backend.h"
#include "enigma/Runtime/BoundsCheck.h"
#include "enigma/Support/Error.h"

namespace nb = nanobind;

NB_MODULE(_core, m) {
  m.doc() = "Enigma's C++ core: the tracing builder, compiler and runtimes";
  nb::exception<enigma::EnigmaError>(m, "EnigmaError");
  auto runtimeError = nb::exception<enigma::RuntimeFailure>(
      m, "EnigmaRuntimeError", PyExc_RuntimeError);
  // Dispatch failures are RuntimeErrors (API.md section 3) and, being about
  // the caller's arguments, ValueErrors too.
  nb::object dispatchBases = nb::make_tuple(runtimeError, nb::handle(PyExc_ValueError));
  nb::exception<enigma::DispatchError>(m, "DispatchError", dispatchBases);
  nb::exception<enigma::BackendUnavailable>(m, "BackendUnavailableError",
                                            runtimeError);
  nb::exception<enigma::BoundsViolation>(m, "BoundsCheckError", runtimeError);
  enigma::python::bindBuilder(m);
  enigma::python::bindRuntime(m);
  enigma::python::bindMetalRuntime(m);
  enigma::python::bindBuiltins(m);
  enigma::python::bindVectors(m);
  enigma::python::bindCooperations(m);
  enigma::python::bindSimds(m);
  enigma::python::bindControls(m);
  enigma::python::bindLayouts(m);
  enigma::python::bindTensors(m);
}
