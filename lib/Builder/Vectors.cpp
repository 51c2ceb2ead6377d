//===- Vectors.cpp - KernelBuilder calls of the vectors family -------------===//
#include "enigma/Builder/Vectors.h"

#include "BuilderImpl.h"

using namespace mlir;

namespace enigma {
} // namespace enigma
