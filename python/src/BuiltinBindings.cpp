//===- BuiltinBindings.cpp - Math, integer, bit, compare, select, as_type ---===//
//
// Module-level functions taking the KernelBuilder first; functions are named
// by their Python names ("sqrt", "abs_diff", "cmp_ult") so the Python layer
// (enigma/_math.py) stays a thin list of documented wrappers.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Builtins.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {

void bindBuiltins(nb::module_ &m) {
  m.def(
      "math_call",
      [](KernelBuilder &b, const std::string &name,
         const std::vector<Value> &args) {
        std::optional<MathFn> fn = mathFnByName(name);
        if (!fn)
          throw EnigmaError("unknown math function '" + name + "'");
        return mathCall(b, *fn, args);
      },
      "builder"_a, "name"_a, "args"_a,
      "Applies the Metal function `name` (a Python name) to `args`.");
  m.def("extract_bits", &extractBits, "builder"_a, "x"_a, "offset"_a,
        "bits"_a);
  m.def("insert_bits", &insertBits, "builder"_a, "base"_a, "insert"_a,
        "offset"_a, "bits"_a);
  m.def(
      "compare_by",
      [](KernelBuilder &b, const std::string &name, Value x, Value y) {
        std::optional<CmpKind> kind = cmpKindByName(name);
        if (!kind)
          throw EnigmaError("unknown comparison '" + name + "'");
        return cmp(b, *kind, x, y);
      },
      "builder"_a, "name"_a, "a"_a, "b"_a);
  m.def("where", &where, "builder"_a, "false_value"_a, "true_value"_a,
        "cond"_a);
  m.def(
      "as_type",
      [](KernelBuilder &b, Value x, const std::string &dtype) {
        std::optional<DType> t = parseDType(dtype);
        if (!t)
          throw EnigmaError("unknown dtype '" + dtype + "'");
        return asType(b, x, *t);
      },
      "builder"_a, "x"_a, "dtype"_a);
}

} // namespace enigma::python
