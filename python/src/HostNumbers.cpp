//===- HostNumbers.cpp - Python numbers as launch arguments ---------------===//
//
// One reading of a Python object as a number, shared by `execute`'s
// scalars, function constants and list inputs and by the function-call
// form, so that every path accepts the same objects and converts them the
// same way: Python bool / int / float and numpy's bool_, integer and
// floating scalars. Anything else (strings, None, complex numbers,
// Fractions, Decimals, arrays of any shape) is not a number here, even if
// Python could convert it.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Runtime/Dispatch.h"
#include "enigma/Support/Error.h"

#include <nanobind/stl/string.h>

#include <cstring>

namespace nb = nanobind;

namespace enigma::python {
namespace {

/// numpy's scalar base types, looked up once (numpy is a dependency of the
/// package). The references are kept for the life of the process: a static
/// nb::object would be released after the interpreter is gone.
struct NumpyScalarTypes {
  PyObject *boolean = nullptr, *integer = nullptr, *floating = nullptr;
};

const NumpyScalarTypes &numpyScalarTypes() {
  static const NumpyScalarTypes types = [] {
    NumpyScalarTypes t;
    nb::module_ np = nb::module_::import_("numpy");
    t.boolean = nb::object(np.attr("bool_")).release().ptr();
    t.integer = nb::object(np.attr("integer")).release().ptr();
    t.floating = nb::object(np.attr("floating")).release().ptr();
    return t;
  }();
  return types;
}

bool isInstance(PyObject *o, PyObject *type) {
  int r = PyObject_IsInstance(o, type);
  if (r < 0)
    PyErr_Clear();
  return r == 1;
}

HostNumber integerOf(nb::handle integer) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(integer.ptr(), &overflow);
  if (!overflow && !(v == -1 && PyErr_Occurred()))
    return HostNumber(int64_t(v));
  PyErr_Clear();
  unsigned long long u = PyLong_AsUnsignedLongLong(integer.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw DispatchError("the integer " +
                        nb::cast<std::string>(nb::str(integer)) +
                        " does not fit in 64 bits");
  }
  return HostNumber(uint64_t(u));
}

} // namespace

std::optional<HostNumber> hostNumberOf(nb::handle value) {
  PyObject *o = value.ptr();
  if (PyBool_Check(o))
    return HostNumber(o == Py_True);
  if (PyFloat_Check(o))
    return HostNumber(PyFloat_AS_DOUBLE(o));
  if (PyLong_Check(o))
    return integerOf(value);
  const NumpyScalarTypes &np = numpyScalarTypes();
  if (isInstance(o, np.boolean))
    return HostNumber(PyObject_IsTrue(o) == 1);
  if (isInstance(o, np.integer)) {
    nb::object index = nb::steal(PyNumber_Index(o));
    if (!index.is_valid()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return integerOf(index);
  }
  if (isInstance(o, np.floating)) {
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return HostNumber(d);
  }
  return std::nullopt;
}

std::string pythonTypeName(nb::handle value) {
  return Py_TYPE(value.ptr())->tp_name;
}

namespace {

/// The elements of a (flattened) list input as `dtype` bytes, each read by
/// the rules of a scalar of that dtype.
nb::bytes packNumbers(const nb::list &values, const std::string &dtypeName,
                      const std::string &label) {
  DType dtype = dtypeNamed(dtypeName);
  size_t width = byteWidth(dtype);
  std::string bytes(values.size() * width, '\0');
  for (size_t k = 0; k < values.size(); ++k) {
    std::string what = label + ": element " + std::to_string(k);
    std::optional<HostNumber> number;
    try {
      number = hostNumberOf(values[k]);
    } catch (const DispatchError &e) {
      throw DispatchError(what + ": " + e.what());
    }
    if (!number)
      throw DispatchError(what + " needs a number, got " +
                          pythonTypeName(values[k]));
    ScalarValue scalar = convertNumber(*number, dtype, what);
    // The low bytes of the bits, in the host's (little-endian) order.
    std::memcpy(&bytes[k * width], &scalar.bits, width);
  }
  return nb::bytes(bytes.data(), bytes.size());
}

/// The number `value` is (a Python bool, int or float), or None.
nb::object hostNumber(nb::handle value, const std::string &what) {
  std::optional<HostNumber> number;
  try {
    number = hostNumberOf(value);
  } catch (const DispatchError &e) {
    throw DispatchError(what + ": " + e.what());
  }
  if (!number)
    return nb::none();
  return std::visit([](auto v) { return nb::cast(v); }, *number);
}

} // namespace

void bindHostNumbers(nb::module_ &m) {
  m.def("pack_numbers", &packNumbers, nb::arg("values"), nb::arg("dtype"),
        nb::arg("label"),
        "The elements of a flat list as bytes of `dtype`, each converted "
        "and checked as a scalar of that dtype is; DispatchError naming "
        "the element otherwise.");
  m.def("host_number", &hostNumber, nb::arg("value").none(), nb::arg("what"),
        "`value` as a Python bool, int or float when it is a number a "
        "launch takes (Python or numpy scalar), else None.");
}

} // namespace enigma::python
