//===- Vectors.h - KernelBuilder calls of the vectors family -----*- C++ -*-===//
#ifndef ENIGMA_BUILDER_VECTORS_H
#define ENIGMA_BUILDER_VECTORS_H

#include "enigma/Builder/KernelBuilder.h"

namespace enigma {
} // namespace enigma

#endif
