//===- SimdBindings.cpp -------------------------------------------------===//
#include "Bindings.h"

namespace nb = nanobind;

namespace enigma::python {
void bindSimds(nb::module_ &m) {}
} // namespace enigma::python
