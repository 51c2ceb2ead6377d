//===- Simd.cpp - KernelBuilder calls of the simd family -------------===//
#include "enigma/Builder/Simd.h"

#include "BuilderImpl.h"

using namespace mlir;

namespace enigma {
} // namespace enigma
