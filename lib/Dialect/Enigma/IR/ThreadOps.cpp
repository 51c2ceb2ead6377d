//===- ThreadOps.cpp - Thread and grid query ops --------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace enigma;

// Every query returns a Metal `uint` (i32; ODS infers it) and is meaningful
// only inside a kernel.
static LogicalResult verifyInKernel(Operation *op) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("is a thread query and must be inside an "
                           "enigma.kernel");
  return success();
}

#define ENIGMA_THREAD_QUERY(Op)                                                \
  LogicalResult Op::verify() { return verifyInKernel(getOperation()); }

ENIGMA_THREAD_QUERY(ThreadPositionInGridOp)
ENIGMA_THREAD_QUERY(ThreadPositionInThreadgroupOp)
ENIGMA_THREAD_QUERY(ThreadgroupPositionInGridOp)
ENIGMA_THREAD_QUERY(ThreadsPerThreadgroupOp)
ENIGMA_THREAD_QUERY(ThreadsPerGridOp)
ENIGMA_THREAD_QUERY(ThreadgroupsPerGridOp)
ENIGMA_THREAD_QUERY(ThreadIndexInThreadgroupOp)
ENIGMA_THREAD_QUERY(ThreadIndexInSimdgroupOp)
ENIGMA_THREAD_QUERY(SimdgroupIndexInThreadgroupOp)
ENIGMA_THREAD_QUERY(ThreadsPerSimdgroupOp)
ENIGMA_THREAD_QUERY(SimdgroupsPerThreadgroupOp)

#undef ENIGMA_THREAD_QUERY
