//===- LaunchErrors.cpp - Messages of the function-call form --------------===//
#include "LaunchErrors.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace enigma::python::launch {

std::string describeParam(const KernelParam &param) {
  return param.name + " (" + shortName(param.dtype) +
         (param.kind == ParamKind::Buffer ? " buffer)" : " scalar)");
}

std::string whereText(int device) {
  return device == kHost ? std::string("host memory")
         : device == kElsewhere ? std::string("neither host nor CUDA memory")
                                : "CUDA device " + std::to_string(device);
}

std::string arrayText(nb::handle obj) {
  try {
    return nb::cast<std::string>(shared().arrayText(obj));
  } catch (const std::exception &) {
    std::string type = Py_TYPE(obj.ptr())->tp_name;
    bool vowel = !type.empty() && std::string("aeiouAEIOU").find(type[0]) !=
                                      std::string::npos;
    return (vowel ? "an " : "a ") + type;
  }
}

[[noreturn]] void argumentError(const CallForm &form, size_t param,
                                nb::handle obj, const std::string &why) {
  throw DispatchError("kernel " + form.name + ": argument " +
                      describeParam(form.params[param]) + " is " +
                      arrayText(obj) + "; " + why);
}

} // namespace enigma::python::launch
