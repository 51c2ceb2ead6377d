//===- ThreadLoopOps.cpp - Threads run one after another ------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace enigma;

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.cpp.inc"

namespace {
/// Lets fragments (ranked tensor values held by one lane) and async-copy
/// events be elements of a memref: the CPU backend keeps those that live
/// across a barrier in per-thread arrays like any other value.
template <class T>
struct PerThreadElementModel
    : MemRefElementTypeInterface::ExternalModel<PerThreadElementModel<T>, T> {
};

LogicalResult verifyInSerializedKernel(Operation *op) {
  auto kernel = op->getParentOfType<KernelOp>();
  if (!kernel || !kernel->hasAttr(kSerializedThreadsAttr))
    return op->emitOpError("must be in a kernel marked ")
           << kSerializedThreadsAttr;
  if (op->getParentOfType<ThreadLoopOp>())
    return op->emitOpError("must not be inside an enigma.thread_loop");
  return success();
}
} // namespace

bool enigma::isThreadVaryingQuery(Operation *op) {
  return isa<ThreadPositionInGridOp, ThreadPositionInThreadgroupOp,
             ThreadIndexInThreadgroupOp, ThreadIndexInSimdgroupOp,
             SimdgroupIndexInThreadgroupOp>(op);
}

void ThreadLoopOp::build(OpBuilder &builder, OperationState &state,
                         Value simdgroup) {
  if (simdgroup)
    state.addOperands(simdgroup);
  state.addRegion()->emplaceBlock();
}

LogicalResult ThreadLoopOp::verify() {
  if (failed(verifyInSerializedKernel(*this)))
    return failure();
  WalkResult found = getBody().walk([](Operation *op) {
    return isa<BarrierOp, SimdBarrierOp>(op) || op->hasTrait<Collective>()
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (found.wasInterrupted())
    return emitOpError("must not hold a barrier or simdgroup function: all "
                       "threads reach those together, between thread loops");
  return success();
}

LogicalResult LanesCallOp::verify() {
  if (getCallee().empty())
    return emitOpError("needs a callee");
  return verifyInSerializedKernel(*this);
}

void EnigmaDialect::registerThreadLoopOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.cpp.inc"
      >();
  RankedTensorType::attachInterface<PerThreadElementModel<RankedTensorType>>(
      *getContext());
  AsyncEventType::attachInterface<PerThreadElementModel<AsyncEventType>>(
      *getContext());
}
