//===- EmitControl.cpp ------------------------------------------------------===//
#include "Families.h"

using namespace mlir;

namespace enigma {

LogicalResult emitControlFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = false;
  return success();
}

} // namespace enigma
