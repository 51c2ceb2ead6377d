//===- ControlBindings.cpp - While loops, guarded memory, registers -------===//
//
// Free functions over a KernelBuilder (bound in BuilderBindings.cpp), called
// by python/enigma/_control.py.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Control.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
void bindControl(nb::module_ &m) {
  m.def("begin_while", &beginWhile, "builder"_a, "inits"_a,
        "Starts an scf.while; returns the carried values of the condition");
  m.def("begin_do_while", &beginDoWhile, "builder"_a, "inits"_a,
        "Starts an scf.while whose body is traced in its condition region");
  m.def("while_condition", &whileCondition, "builder"_a, "cond"_a,
        "forwarded"_a,
        "Ends the condition; returns the carried values of the body");
  m.def("end_while", &endWhile, "builder"_a, "next"_a,
        "Ends the body; returns the values after the loop");
  // Late values (Control.h): lists of (value or None) and of (dtype, lanes).
  auto values = [](const std::vector<std::optional<Value>> &in) {
    std::vector<Value> out;
    for (const std::optional<Value> &v : in)
      out.push_back(v ? *v : Value());
    return out;
  };
  auto lateTypes =
      [](const std::vector<std::tuple<std::string, unsigned>> &in) {
        std::vector<LateType> out;
        for (const auto &[dtype, lanes] : in)
          out.push_back(LateType{dtypeNamed(dtype), lanes});
        return out;
      };
  m.def(
      "end_if_late",
      [=](KernelBuilder &k, const std::vector<Value> &last,
          const std::vector<std::optional<Value>> &thenLate,
          const std::vector<std::optional<Value>> &elseLate,
          const std::vector<std::tuple<std::string, unsigned>> &types) {
        return endIfLate(k, last, values(thenLate), values(elseLate),
                         lateTypes(types));
      },
      "builder"_a, "last"_a, "then_late"_a, "else_late"_a, "types"_a,
      "Ends an if whose arms gave late values (None: a zero there)");
  m.def(
      "end_for_late",
      [=](KernelBuilder &k, const std::vector<Value> &next,
          const std::vector<std::optional<Value>> &late,
          const std::vector<std::tuple<std::string, unsigned>> &types) {
        return endForLate(k, next, values(late), lateTypes(types));
      },
      "builder"_a, "next"_a, "late"_a, "types"_a,
      "Ends a for loop whose body gave late values");
  m.def(
      "end_while_late",
      [=](KernelBuilder &k, const std::vector<Value> &next,
          const std::vector<std::optional<Value>> &fromCondition,
          const std::vector<std::optional<Value>> &fromBody,
          const std::vector<std::tuple<std::string, unsigned>> &types) {
        return endWhileLate(k, next, values(fromCondition), values(fromBody),
                            lateTypes(types));
      },
      "builder"_a, "next"_a, "from_condition"_a, "from_body"_a, "types"_a,
      "Ends a while loop whose condition or body gave late values");
  m.def("check_index", &checkIndex, "builder"_a, "index"_a, "extent"_a,
        "dim"_a, "buffer"_a, "shape"_a, "extent_name"_a,
        "An enigma.index_check: index < extent in bounds-checked mode");
  m.def("control_select", &select, "builder"_a, "cond"_a, "if_true"_a,
        "if_false"_a);
  m.def("load_if", &loadIf, "builder"_a, "buffer"_a, "index"_a, "mask"_a,
        "fallback"_a);
  m.def("store_if", &storeIf, "builder"_a, "buffer"_a, "index"_a, "value"_a,
        "mask"_a);

  nb::class_<RegisterArray>(m, "RegisterArray",
                            "A per-thread array of a kernel")
      .def_prop_ro("dtype",
                   [](const RegisterArray &r) { return shortName(r.dtype()); })
      .def_prop_ro("size", &RegisterArray::size);
  m.def(
      "alloc_registers",
      [](KernelBuilder &k, const std::string &dtype, int64_t size,
         double fill) {
        return allocRegisters(k, dtypeNamed(dtype), size, fill);
      },
      "builder"_a, "dtype"_a, "size"_a, "fill"_a = 0.0);
  m.def("load_register", &loadRegister, "builder"_a, "registers"_a,
        "index"_a);
  m.def("store_register", &storeRegister, "builder"_a, "registers"_a,
        "index"_a, "value"_a);
}

} // namespace enigma::python
