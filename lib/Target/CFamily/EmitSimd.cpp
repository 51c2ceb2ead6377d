//===- EmitSimd.cpp -------------------------------------------------------===//
#include "Families.h"

using namespace mlir;

namespace enigma {

LogicalResult emitSimdFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = false;
  return success();
}

} // namespace enigma
