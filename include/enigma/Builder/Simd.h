//===- Simd.h - KernelBuilder calls of the simd family -----*- C++ -*-===//
#ifndef ENIGMA_BUILDER_SIMD_H
#define ENIGMA_BUILDER_SIMD_H

#include "enigma/Builder/KernelBuilder.h"

namespace enigma {
} // namespace enigma

#endif
