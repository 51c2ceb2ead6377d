//===- CheckOps.cpp - Checks of bounds-checked mode -----------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

using namespace mlir;
using namespace enigma;

LogicalResult IndexCheckOp::verify() {
  // (I32Attr reads as unsigned; the attribute's own value keeps the sign.)
  if (getDimAttr().getInt() < 0)
    return emitOpError("needs a dimension >= 0, got ")
           << getDimAttr().getInt();
  return success();
}
