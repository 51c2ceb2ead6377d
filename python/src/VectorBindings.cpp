//===- VectorBindings.cpp -------------------------------------------------===//
#include "Bindings.h"

namespace nb = nanobind;

namespace enigma::python {
void bindVectors(nb::module_ &m) {}
} // namespace enigma::python
