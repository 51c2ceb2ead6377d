//===- EmitCooperation.cpp ------------------------------------------------------===//
#include "Families.h"

using namespace mlir;

namespace enigma {

LogicalResult emitCooperationFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = false;
  return success();
}

} // namespace enigma

namespace enigma {
void emitFileScopeDeclarations(CFamilyEmitter &e) {}
} // namespace enigma
