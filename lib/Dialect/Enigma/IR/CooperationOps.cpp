//===- CooperationOps.cpp - The cooperation op family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationAttributes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.cpp.inc"

void EnigmaDialect::registerCooperationOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationAttributes.cpp.inc"
      >();
}
