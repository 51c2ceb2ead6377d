//===- ControlFlow.cpp - KernelBuilder calls of the controlflow family -------------===//
#include "enigma/Builder/ControlFlow.h"

#include "BuilderImpl.h"

using namespace mlir;

namespace enigma {
} // namespace enigma
