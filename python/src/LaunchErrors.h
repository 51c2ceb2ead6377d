//===- LaunchErrors.h - Messages of the function-call form ------*- C++ -*-===//
//
// How a call's mistakes are told: the parameter, the array as the user
// wrote it, where its memory is, and why it does not fit.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_PYTHON_LAUNCHERRORS_H
#define ENIGMA_PYTHON_LAUNCHERRORS_H

#include "LaunchForm.h"

#include <string>

namespace enigma::python::launch {

/// "name (f32 buffer)".
std::string describeParam(const KernelParam &param);

/// "host memory", "CUDA device 1"...
std::string whereText(int device);

/// The array as the Python layer describes it ("a numpy.ndarray of
/// float64, shape (3,)"), or its type's name.
std::string arrayText(nanobind::handle obj);

/// Throws the DispatchError for argument `param` of a call: the kernel,
/// the parameter, the array, then `why`.
[[noreturn]] void argumentError(const CallForm &form, size_t param,
                                nanobind::handle obj, const std::string &why);

} // namespace enigma::python::launch

#endif // ENIGMA_PYTHON_LAUNCHERRORS_H
