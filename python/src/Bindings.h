//===- Bindings.h - Pieces of the enigma._core module -----------*- C++ -*-===//
#ifndef ENIGMA_PYTHON_BINDINGS_H
#define ENIGMA_PYTHON_BINDINGS_H

#include <nanobind/nanobind.h>

namespace enigma::python {
void bindBuilder(nanobind::module_ &m);
void bindRuntime(nanobind::module_ &m);
} // namespace enigma::python

#endif
