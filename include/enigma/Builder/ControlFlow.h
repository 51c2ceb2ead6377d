//===- ControlFlow.h - KernelBuilder calls of the controlflow family -----*- C++ -*-===//
#ifndef ENIGMA_BUILDER_CONTROLFLOW_H
#define ENIGMA_BUILDER_CONTROLFLOW_H

#include "enigma/Builder/KernelBuilder.h"

namespace enigma {
} // namespace enigma

#endif
