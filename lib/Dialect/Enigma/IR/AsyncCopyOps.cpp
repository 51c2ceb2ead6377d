//===- AsyncCopyOps.cpp - The async copy op family -------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/Divergence.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

namespace enigma {

bool isAsyncCopyOp(Operation *op) {
  return isa<AsyncCopy1dD2TOp, AsyncCopy1dT2DOp, AsyncCopy2dD2TOp,
             AsyncCopy2dT2DOp>(op);
}

static const char *spaceName(AddressSpace space) {
  switch (space) {
  case AddressSpace::Device: return "device";
  case AddressSpace::Constant: return "constant";
  case AddressSpace::Threadgroup: return "threadgroup";
  case AddressSpace::Thread: return "thread";
  }
  return "?";
}

/// Every async copy op and the wait. The copy is one operation of the whole
/// simdgroup in Metal (and the CUDA and CPU versions split it among the
/// lanes), so all lanes must reach it; the memory must be in the address
/// spaces of the op's direction.
LogicalResult verifyAsyncCopyOp(Operation *op) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("must be inside an enigma.kernel");
  if (Operation *owner = findDivergentRegionOwner(op, SyncScope::Simdgroup)) {
    InFlightDiagnostic diag = op->emitOpError(
        "is under control flow that depends on the thread's lane; an async "
        "copy is issued by the whole simdgroup, so every lane must reach it "
        "(a condition shared by the simdgroup's lanes, such as "
        "simdgroup_index_in_threadgroup() == 0, is fine)");
    attachDivergenceNotes(diag, owner, SyncScope::Simdgroup);
    return diag;
  }
  if (auto wait = dyn_cast<AsyncCopyWaitOp>(op)) {
    if (wait.getEvents().empty())
      return op->emitOpError("needs at least one event to wait for");
    return success();
  }
  bool toThreadgroup = op->getName().getStringRef().ends_with("d2t");
  auto dst = llvm::cast<MemRefType>(op->getOperand(0).getType());
  // The src memref follows dst_offset (1-D) or dst_elements_per_row (2-D).
  unsigned srcIndex = isa<AsyncCopy1dD2TOp, AsyncCopy1dT2DOp>(op) ? 2 : 3;
  auto src = llvm::cast<MemRefType>(op->getOperand(srcIndex).getType());
  AddressSpace wantDst =
      toThreadgroup ? AddressSpace::Threadgroup : AddressSpace::Device;
  AddressSpace wantSrc =
      toThreadgroup ? AddressSpace::Device : AddressSpace::Threadgroup;
  if (getAddressSpace(dst) != wantDst)
    return op->emitOpError("copies ")
           << spaceName(wantSrc) << " -> " << spaceName(wantDst)
           << " memory, but its destination is in the "
           << spaceName(getAddressSpace(dst)) << " address space";
  if (getAddressSpace(src) != wantSrc)
    return op->emitOpError("copies ")
           << spaceName(wantSrc) << " -> " << spaceName(wantDst)
           << " memory, but its source is in the "
           << spaceName(getAddressSpace(src)) << " address space";
  if (dst.getElementType() != src.getElementType())
    return op->emitOpError("copies between different element types (")
           << src.getElementType() << " to " << dst.getElementType()
           << "); source and destination must hold the same type";
  return success();
}

} // namespace enigma

#define GET_TYPEDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyTypes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.cpp.inc"

void EnigmaDialect::registerAsyncCopyOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyTypes.cpp.inc"
      >();
}
