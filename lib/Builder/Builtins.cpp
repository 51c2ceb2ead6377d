//===- Builtins.cpp - KernelBuilder calls of the builtins family -------------===//
#include "enigma/Builder/Builtins.h"

#include "BuilderImpl.h"

using namespace mlir;

namespace enigma {
} // namespace enigma
