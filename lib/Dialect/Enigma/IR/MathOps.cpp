//===- MathOps.cpp - The math op family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

#include "enigma/Dialect/Enigma/IR/EnigmaMathEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMathAttributes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.cpp.inc"

void EnigmaDialect::registerMathOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMathAttributes.cpp.inc"
      >();
}
