//===- SyncOps.cpp - Barriers ---------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

using namespace mlir;
using namespace enigma;

/// Metal requires every thread of the group (or simdgroup) to reach the
/// barrier; one under thread-dependent control flow deadlocks or is
/// undefined, so reject it when the dependence is visible in the IR.
static LogicalResult verifyBarrier(Operation *op, SyncScope scope) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("must be inside an enigma.kernel");
  if (Operation *owner = findDivergentRegionOwner(op, scope)) {
    InFlightDiagnostic diag = op->emitOpError(
        "is under control flow that depends on the thread's position; every "
        "thread of the ");
    diag << (scope == SyncScope::Threadgroup ? "threadgroup" : "simdgroup")
         << " must reach it";
    attachDivergenceNotes(diag, owner, scope);
    return diag;
  }
  return success();
}

LogicalResult BarrierOp::verify() {
  return verifyBarrier(getOperation(), SyncScope::Threadgroup);
}

LogicalResult SimdBarrierOp::verify() {
  return verifyBarrier(getOperation(), SyncScope::Simdgroup);
}
