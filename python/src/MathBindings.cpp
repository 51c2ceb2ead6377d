//===- MathBindings.cpp - The op tables' functions, select, as_type -------===//
//
// function_table() hands Python the rows of every family's table
// (generated from the .td files), from which python/enigma/_functions.py
// makes the enigma.<name> wrappers at import time; call_function builds any
// of them by name. Selection and reinterpretation have no table row.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Math.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {

void bindMath(nb::module_ &m) {
  m.def(
      "function_table",
      [] {
        nb::list rows;
        for (const Function &fn : functionTable())
          rows.append(nb::make_tuple(fn.family, fn.name,
                                     functionRuleName(fn.rule), fn.args,
                                     fn.lanes, fn.doc));
        return rows;
      },
      "Rows (family, name, rule, args, lanes, doc) of every op family's "
      "function table.");
  auto call = [](KernelBuilder &b, const std::string &name,
                 const std::vector<Value> &args) {
    return callFunction(b, name, args);
  };
  m.def("call_function", call, "builder"_a, "name"_a, "args"_a,
        "Builds the table function `name` (its Python name) on `args`.");
  // The name the front end's leaf module calls enigma.abs by.
  m.def("math_call", call, "builder"_a, "name"_a, "args"_a);
  // The entry points the Python modules used before they read the table.
  m.def("compare_by", [](KernelBuilder &b, const std::string &name, Value x,
                         Value y) { return callFunction(b, name, {x, y}); });
  m.def("extract_bits", [](KernelBuilder &b, Value x, Value o, Value n) {
    return callFunction(b, "extract_bits", {x, o, n});
  });
  m.def("insert_bits",
        [](KernelBuilder &b, Value x, Value y, Value o, Value n) {
          return callFunction(b, "insert_bits", {x, y, o, n});
        });
  for (const char *name : {"dot", "length", "distance", "normalize", "cross",
                           "reflect", "refract", "faceforward"})
    m.def(name, [name](KernelBuilder &b, nb::args args) {
      std::vector<Value> values;
      for (nb::handle a : args)
        values.push_back(nb::cast<Value>(a));
      return callFunction(b, name, values);
    });
  m.def("pack_lanes", [](const std::string &format) {
    const Function *fn = findFunction("pack_float_to_" + format);
    if (!fn)
      throw EnigmaError("unknown pack format '" + format + "'");
    return fn->lanes;
  });
  m.def("pack_float", [](KernelBuilder &b, const std::string &format,
                         Value v) {
    return callFunction(b, "pack_float_to_" + format, {v});
  });
  m.def("unpack_to_float", [](KernelBuilder &b, const std::string &format,
                              Value u) {
    std::string name = format == "srgb_unorm4x8"
                           ? "unpack_unorm4x8_srgb_to_float"
                           : "unpack_" + format + "_to_float";
    return callFunction(b, name, {u});
  });
  m.def("simd_call", [](KernelBuilder &b, const std::string &name) {
    return callFunction(b, name, {}); // simd_is_first(), ...
  });
  m.def("simd_call", [](KernelBuilder &b, const std::string &name, Value v) {
    return callFunction(b, name, {v});
  });
  m.def("simd_call", [](KernelBuilder &b, const std::string &name, Value v,
                        Value lane) { return callFunction(b, name, {v, lane}); });
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
