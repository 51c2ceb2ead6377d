//===- EnigmaOps.cpp - Generated op definitions ---------------------------===//
//
// Only the TableGen'd definitions; hand-written parts of each op family live
// in KernelOp.cpp, ThreadOps.cpp, SyncOps.cpp and CheckOps.cpp.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace enigma;

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaOps.cpp.inc"
