//===- ControlBindings.cpp -------------------------------------------------===//
#include "Bindings.h"

namespace nb = nanobind;

namespace enigma::python {
void bindControls(nb::module_ &m) {}
} // namespace enigma::python
