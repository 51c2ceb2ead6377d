//===- LaunchShared.h - The function-call form's process state --*- C++ -*-===//
//
// The Python helpers of enigma._launch, the caches kept per process, and
// the small Python C API calls every part of the call form makes.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_PYTHON_LAUNCHSHARED_H
#define ENIGMA_PYTHON_LAUNCHSHARED_H

#include "LaunchArrays.h"

#include <unordered_map>

namespace enigma::python::launch {

/// The Python helpers of enigma._launch and what is cached per process.
struct Shared {
  nanobind::object describeArray; // obj -> (address, bytes, dtype, device, ...)
  nanobind::object arrayText;     // obj -> "a numpy.ndarray of float64, shape (3,)"
  nanobind::object readerOf;      // type -> "buffer" | "torch" | "cupy" | ...
  nanobind::object dtypeName;     // dtype object -> Enigma short name or None
  nanobind::object torchStream;   // device -> current CUstream of PyTorch
  nanobind::object cupyStream;    // device -> current CUstream of CuPy
  // CuPy's current device (a Python call; None on a machine with one
  // device, where it is always the arrays' device) and, when this CuPy
  // exports it, its C function for the current CUstream of that device (a
  // direct call).
  nanobind::object cupyCurrentDevice;
  intptr_t (*cupyCurrentStream)() = nullptr;
  nanobind::object firstCall;     // (owner, where, runtime, constants) -> None
  nanobind::object globalsChanged; // (owner) -> None: a name the body reads changed
  nanobind::object logLaunch;     // (name, grid, threads, runtime) or None
  std::unordered_map<PyTypeObject *, Reader> readers;
  std::unordered_map<PyObject *, std::optional<DType>> dtypes;
  CupyArrayMemo cupyArrays;
  // Attribute names, interned once.
  nanobind::object sDataPtr, sDtype, sIsContiguous, sIsCuda, sIsCpu, sGetDevice,
      sNbytes, sData, sPtr, sDeviceId, sCContiguous, sCore;
  /// The runtime `with enigma.use_runtime(rt)` selects, per thread.
  static thread_local PyObject *scopedRuntime;
};

Shared &shared();

/// CuPy's current stream through its C function (it may raise).
uint64_t cupyCurrentStream(Shared &s);

/// Takes CuPy's exported C function for the current stream (Cython's
/// __pyx_capi__ capsule, named by its signature) when it is the function
/// we expect: intptr_t (void), returning `expected` now.
bool installCupyStream(nanobind::handle capsule, uint64_t expected);

/// A new reference to obj.name, or a Python error.
inline nanobind::object attr(nanobind::handle obj, const nanobind::object &name) {
  PyObject *value = PyObject_GetAttr(obj.ptr(), name.ptr());
  if (!value)
    throw nanobind::python_error();
  return nanobind::steal(value);
}

inline nanobind::object callMethod(nanobind::handle obj, const nanobind::object &name) {
  PyObject *value = PyObject_CallMethodNoArgs(obj.ptr(), name.ptr());
  if (!value)
    throw nanobind::python_error();
  return nanobind::steal(value);
}

inline uint64_t asU64(nanobind::handle value) {
  unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
  if (v == (unsigned long long)-1 && PyErr_Occurred())
    throw nanobind::python_error();
  return v;
}

inline int64_t asI64(nanobind::handle value) {
  long long v = PyLong_AsLongLong(value.ptr());
  if (v == -1 && PyErr_Occurred())
    throw nanobind::python_error();
  return v;
}

inline bool truth(nanobind::handle value) {
  int t = PyObject_IsTrue(value.ptr());
  if (t < 0)
    throw nanobind::python_error();
  return t == 1;
}

} // namespace enigma::python::launch

#endif // ENIGMA_PYTHON_LAUNCHSHARED_H
