//===- Builtins.h - KernelBuilder calls of the builtins family -----*- C++ -*-===//
#ifndef ENIGMA_BUILDER_BUILTINS_H
#define ENIGMA_BUILDER_BUILTINS_H

#include "enigma/Builder/KernelBuilder.h"

namespace enigma {
} // namespace enigma

#endif
