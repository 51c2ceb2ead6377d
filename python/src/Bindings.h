//===- Bindings.h - Pieces of the enigma._core module -----------*- C++ -*-===//
#ifndef ENIGMA_PYTHON_BINDINGS_H
#define ENIGMA_PYTHON_BINDINGS_H

#include <nanobind/nanobind.h>

namespace enigma::python {
void bindBuilder(nanobind::module_ &m);
void bindRuntime(nanobind::module_ &m);
// One per op family, each in its own file.
void bindBuiltins(nanobind::module_ &m);
void bindVectors(nanobind::module_ &m);
void bindCooperations(nanobind::module_ &m);
void bindSimds(nanobind::module_ &m);
void bindControls(nanobind::module_ &m);
} // namespace enigma::python

#endif
