//===- BuiltinBindings.cpp -------------------------------------------------===//
#include "Bindings.h"

namespace nb = nanobind;

namespace enigma::python {
void bindBuiltins(nb::module_ &m) {}
} // namespace enigma::python
