//===- ControlBindings.cpp - While loops, guarded memory, registers -------===//
//
// Free functions over a KernelBuilder (bound in BuilderBindings.cpp), called
// by python/enigma/_control.py.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Control.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
void bindControl(nb::module_ &m) {
  m.def("begin_while", &beginWhile, "builder"_a, "inits"_a,
        "Starts an scf.while; returns the carried values of the condition");
  m.def("while_condition", &whileCondition, "builder"_a, "cond"_a,
        "forwarded"_a,
        "Ends the condition; returns the carried values of the body");
  m.def("end_while", &endWhile, "builder"_a, "next"_a,
        "Ends the body; returns the values after the loop");
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
