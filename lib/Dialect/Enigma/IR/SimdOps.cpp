//===- SimdOps.cpp - The simd op family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

#include "enigma/Dialect/Enigma/IR/EnigmaSimdEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaSimdAttributes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.cpp.inc"

void EnigmaDialect::registerSimdOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaSimdAttributes.cpp.inc"
      >();
}
