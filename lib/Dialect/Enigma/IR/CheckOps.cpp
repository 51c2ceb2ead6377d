//===- CheckOps.cpp - Checks of bounds-checked mode -----------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

using namespace mlir;
using namespace enigma;

LogicalResult IndexCheckOp::verify() {
  if (getDim() < 0)
    return emitOpError("needs a dimension >= 0, got ") << getDim();
  return success();
}
