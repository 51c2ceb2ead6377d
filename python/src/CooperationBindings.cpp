//===- CooperationBindings.cpp -------------------------------------------------===//
#include "Bindings.h"

namespace nb = nanobind;

namespace enigma::python {
void bindCooperations(nb::module_ &m) {}
} // namespace enigma::python
