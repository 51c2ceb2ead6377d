//===- LaunchShared.cpp - The function-call form's process state ----------===//
#include "LaunchShared.h"

namespace nb = nanobind;

namespace enigma::python::launch {

thread_local PyObject *Shared::scopedRuntime = nullptr;

Shared &shared() {
  static Shared *state = [] {
    auto *s = new Shared(); // lives as long as the process, like the module
    s->sDataPtr = nb::str("data_ptr");
    s->sDtype = nb::str("dtype");
    s->sIsContiguous = nb::str("is_contiguous");
    s->sIsCuda = nb::str("is_cuda");
    s->sIsCpu = nb::str("is_cpu");
    s->sGetDevice = nb::str("get_device");
    s->sNbytes = nb::str("nbytes");
    s->sData = nb::str("data");
    s->sPtr = nb::str("ptr");
    s->sDeviceId = nb::str("device_id");
    s->sCContiguous = nb::str("_c_contiguous");
    s->sCore = nb::str("_core");
    return s;
  }();
  return *state;
}

uint64_t cupyCurrentStream(Shared &s) {
  intptr_t stream = s.cupyCurrentStream();
  if (PyErr_Occurred())
    throw nb::python_error();
  return uint64_t(stream);
}

bool installCupyStream(nb::handle capsule, uint64_t expected) {
  Shared &s = shared();
  s.cupyCurrentStream = nullptr;
  if (!PyCapsule_CheckExact(capsule.ptr()))
    return false;
  const char *name = PyCapsule_GetName(capsule.ptr());
  if (!name || std::string(name) != "intptr_t (void)")
    return false;
  auto fn = reinterpret_cast<intptr_t (*)()>(
      PyCapsule_GetPointer(capsule.ptr(), name));
  if (!fn) {
    PyErr_Clear();
    return false;
  }
  intptr_t now = fn();
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (uint64_t(now) != expected)
    return false;
  s.cupyCurrentStream = fn;
  return true;
}

} // namespace enigma::python::launch
