//===- SimdOps.cpp - The simd op family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"
#include "enigma/Dialect/Enigma/IR/Divergence.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

namespace enigma {
/// Every simd / quad op: inside a kernel and reached by all lanes of its
/// simdgroup. Metal leaves a simdgroup function that only some lanes call
/// undefined, and the CPU backend runs these ops once per group between its
/// thread loops, which is only right when the lanes agree on getting there.
LogicalResult verifySimdGroupOp(Operation *op) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("must be inside an enigma.kernel");
  if (Operation *owner = findDivergentRegionOwner(op, SyncScope::Simdgroup)) {
    InFlightDiagnostic diag = op->emitOpError(
        "is under control flow that depends on the thread's lane; every lane "
        "of the simdgroup must reach it (compute it unconditionally and "
        "select the result instead)");
    attachDivergenceNotes(diag, owner, SyncScope::Simdgroup);
    return diag;
  }
  if (op->hasAttr("is_signed") &&
      !isa<IntegerType>(op->getOperand(0).getType()))
    return op->emitOpError("'is_signed' applies to integer operands only");
  return success();
}

/// The simdgroup matrix ops: the simd functions' rules, and one element type
/// for the memory, the matrices and the fill value.
LogicalResult verifySimdgroupMatrixOp(Operation *op) {
  if (failed(verifySimdGroupOp(op)))
    return failure();
  Type element;
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  for (Type t : types) {
    Type e;
    if (auto mem = llvm::dyn_cast<MemRefType>(t))
      e = mem.getElementType();
    else if (auto vec = llvm::dyn_cast<VectorType>(t))
      e = vec.getElementType();
    else if (llvm::isa<FloatType>(t))
      e = t;
    else
      continue; // offset, elements_per_row
    if (!element)
      element = e;
    else if (e != element)
      return op->emitOpError("mixes element types ")
             << element << " and " << e
             << "; a simdgroup matrix, its memory and its fill value share "
                "one element type";
  }
  return success();
}
} // namespace enigma

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
