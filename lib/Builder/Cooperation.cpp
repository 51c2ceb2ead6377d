//===- Cooperation.cpp - KernelBuilder calls of the cooperation family -------------===//
#include "enigma/Builder/Cooperation.h"

#include "BuilderImpl.h"

using namespace mlir;

namespace enigma {
} // namespace enigma
