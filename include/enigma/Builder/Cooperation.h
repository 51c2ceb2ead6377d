//===- Cooperation.h - KernelBuilder calls of the cooperation family -----*- C++ -*-===//
#ifndef ENIGMA_BUILDER_COOPERATION_H
#define ENIGMA_BUILDER_COOPERATION_H

#include "enigma/Builder/KernelBuilder.h"

namespace enigma {
} // namespace enigma

#endif
