//===- LaunchArrays.cpp - The arrays of a function-form call --------------===//
#include "LaunchArrays.h"
#include "LaunchShared.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

namespace nb = nanobind;

namespace enigma::python::launch {
namespace {

std::optional<DType> dtypeOf(nb::handle dtypeObject) {
  Shared &s = shared();
  auto it = s.dtypes.find(dtypeObject.ptr());
  if (it != s.dtypes.end())
    return it->second;
  nb::object name = s.dtypeName(dtypeObject);
  std::optional<DType> dtype;
  if (!name.is_none())
    dtype = parseDType(nb::cast<std::string>(name));
  // dtype objects are long-lived singletons: keep this one alive so its
  // address stays its key.
  s.dtypes.emplace(dtypeObject.inc_ref().ptr(), dtype);
  return dtype;
}

/// numpy's buffer format characters (native order) -> dtype.
std::optional<DType> dtypeOfFormat(const char *format, Py_ssize_t itemsize) {
  if (!format)
    return DType::U8;
  if (*format == '@' || *format == '=' || *format == '<')
    ++format;
  if (format[0] == 0 || format[1] != 0)
    return std::nullopt;
  switch (format[0]) {
  case 'f': return DType::F32;
  case 'e': return DType::F16;
  case '?': return DType::Bool;
  case 'b': return DType::I8;
  case 'B': return DType::U8;
  case 'h': return DType::I16;
  case 'H': return DType::U16;
  case 'i': case 'l': case 'q':
    return itemsize == 4 ? std::optional(DType::I32)
           : itemsize == 8 ? std::optional(DType::I64) : std::nullopt;
  case 'I': case 'L': case 'Q':
    return itemsize == 4 ? std::optional(DType::U32)
           : itemsize == 8 ? std::optional(DType::U64) : std::nullopt;
  default:
    return std::nullopt;
  }
}

Reader readerFor(PyTypeObject *type) {
  Shared &s = shared();
  auto it = s.readers.find(type);
  if (it != s.readers.end())
    return it->second;
  std::string kind = nb::cast<std::string>(
      s.readerOf(nb::handle(reinterpret_cast<PyObject *>(type))));
  Reader reader = kind == "torch"          ? Reader::Torch
                  : kind == "cupy"         ? Reader::CuPy
                  : kind == "cupy_ndarray" ? Reader::CuPyArray
                  : kind == "buffer"       ? Reader::Buffer
                  : kind == "python"       ? Reader::Python
                                           : Reader::NotArray;
  Py_INCREF(type); // keeps the key valid
  s.readers.emplace(type, reader);
  return reader;
}

} // namespace

bool readArray(nb::handle obj, ArrayInfo &info, HeldViews &held) {
  Shared &s = shared();
  const Reader reader = readerFor(Py_TYPE(obj.ptr()));
  switch (reader) {
  case Reader::Torch: {
    bool onCuda = truth(attr(obj, s.sIsCuda));
    info.device = onCuda ? int(asI64(callMethod(obj, s.sGetDevice)))
                  : truth(attr(obj, s.sIsCpu)) ? kHost
                                                : kElsewhere;
    info.framework = onCuda ? Framework::Torch : Framework::None;
    info.dtype = dtypeOf(attr(obj, s.sDtype));
    info.contiguous = truth(callMethod(obj, s.sIsContiguous));
    info.bytes = size_t(asU64(attr(obj, s.sNbytes)));
    if (info.device != kElsewhere)
      info.address = asU64(callMethod(obj, s.sDataPtr));
    return true;
  }
  case Reader::CuPyArray:
    if (const ArrayInfo *known = s.cupyArrays.find(obj.ptr())) {
      info = *known;
      return true;
    }
    [[fallthrough]];
  case Reader::CuPy: {
    nb::object memory = attr(obj, s.sData);
    info.address = asU64(attr(memory, s.sPtr));
    info.device = int(asI64(attr(memory, s.sDeviceId)));
    info.framework = Framework::CuPy;
    info.dtype = dtypeOf(attr(obj, s.sDtype));
    info.contiguous = truth(attr(obj, s.sCContiguous));
    info.bytes = size_t(asU64(attr(obj, s.sNbytes)));
    if (reader == Reader::CuPyArray && info.contiguous)
      s.cupyArrays.remember(obj.ptr(), info);
    return true;
  }
  case Reader::Buffer: {
    Py_buffer &view = held.views[held.used];
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_STRIDES | PyBUF_FORMAT) !=
        0) {
      // numpy refuses to export some dtypes (bfloat16 of ml_dtypes...):
      // the Python layer describes those.
      PyErr_Clear();
      break;
    }
    held.next(); // released at the end of the call
    info.address = uint64_t(reinterpret_cast<uintptr_t>(view.buf));
    info.bytes = size_t(view.len);
    info.dtype = dtypeOfFormat(view.format, view.itemsize);
    info.contiguous = PyBuffer_IsContiguous(&view, 'C') == 1;
    info.writable = !view.readonly;
    info.device = kHost;
    return true;
  }
  case Reader::Python:
    break;
  case Reader::NotArray:
    return false;
  }
  // (address, bytes, dtype name or None, device, contiguous, writable,
  // synchronous) from the Python layer (JAX, DLPack, the array interface).
  nb::object described = s.describeArray(obj);
  if (described.is_none())
    return false;
  auto t = nb::cast<std::tuple<uint64_t, size_t, nb::object, int, bool, bool,
                               bool>>(described);
  info.address = std::get<0>(t);
  info.bytes = std::get<1>(t);
  nb::object name = std::get<2>(t);
  info.dtype = name.is_none() ? std::nullopt
                              : parseDType(nb::cast<std::string>(name));
  info.device = std::get<3>(t);
  info.contiguous = std::get<4>(t);
  info.writable = std::get<5>(t);
  info.framework = std::get<6>(t) ? Framework::Synchronous : Framework::None;
  return true;
}

} // namespace enigma::python::launch
