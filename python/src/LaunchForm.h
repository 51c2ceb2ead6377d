//===- LaunchForm.h - A kernel's state for the function-call form -*- C++ -*-===//
//
// What python/enigma/_kernel.py makes for a kernel: its parameters, the
// names its traced body read, one loaded kernel per runtime (CallForm),
// and the bracket object `kernel[n]` that launches it (Launcher).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_PYTHON_LAUNCHFORM_H
#define ENIGMA_PYTHON_LAUNCHFORM_H

#include "LaunchShared.h"

#include "enigma/Runtime/Launch.h"

#include <memory>
#include <string>
#include <vector>

namespace enigma::python::launch {

/// One (runtime, function constants, loaded kernel) triple of a kernel.
struct Target {
  nanobind::object runtime; // the enigma._core.Runtime it belongs to
  int where = kHost;  // host, or the CUDA device ordinal
  bool implicit = true; // chosen from the arrays (not runtime=/use_runtime)
  uint32_t constants = 0; // the Python side's number of its constant values
  std::shared_ptr<DirectLauncher> launcher;
};

/// A name the kernel body read when it was traced: a module global
/// (`scope` the module's dict, `name` the key) or a closure cell (`name`
/// null), with the object it held then.
struct NameRead {
  nanobind::object scope, name, value;

  /// Whether the name still holds the same object (a cheap test: equal
  /// values in new objects are sorted out by the Python side).
  bool unchanged() const {
    PyObject *now;
    if (name.is_valid()) {
      now = PyDict_GetItemWithError(scope.ptr(), name.ptr()); // borrowed
      if (!now && PyErr_Occurred())
        throw nanobind::python_error();
    } else {
      now = PyCell_GET(scope.ptr());
    }
    return now == value.ptr();
  }
};

struct CallForm {
  std::string name; // enigma_kernel_<python name>
  std::vector<KernelParam> params;
  nanobind::object owner; // a weak reference to the Python object that owns this
  std::vector<Target> targets;
  std::vector<NameRead> reads; // what the traced body read (see NameRead)

  size_t find(nanobind::handle runtime, int where, uint32_t constants) const {
    for (size_t i = 0; i < targets.size(); ++i) {
      const Target &t = targets[i];
      if (t.constants == constants &&
          (runtime ? t.runtime.ptr() == runtime.ptr()
                   : t.implicit && t.where == where))
        return i;
    }
    return size_t(-1);
  }

  /// Asks the Python side to look at the names the body read when one of
  /// them holds another object now: it re-traces the kernel (dropping the
  /// loaded targets) when a value really changed.
  void checkReads() {
    for (const NameRead &read : reads)
      if (!read.unchanged()) {
        // The Python side checks them all and may replace `reads`.
        shared().globalsChanged(owner);
        return;
      }
  }
};

struct Launcher {
  std::shared_ptr<CallForm> form;
  Dim3 grid, threads;
  nanobind::object key; // (grid, threads) as given, for messages and logs
  uint32_t constants = 0; // which function constant values (0: none)
};

/// `launcher(*args, **kwargs)`: reads and checks the arguments, finds (or
/// has the Python side load) the kernel for where the arrays live, and
/// launches it on the queue of the arrays' framework (LaunchCall.cpp).
void call(Launcher &self, nanobind::args args, nanobind::kwargs kwargs);

} // namespace enigma::python::launch

#endif // ENIGMA_PYTHON_LAUNCHFORM_H
