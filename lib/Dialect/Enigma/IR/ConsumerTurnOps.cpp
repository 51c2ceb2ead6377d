//===- ConsumerTurnOps.cpp - Turns of consumer warpgroups -----------------===//
//
// Verifiers of enigma.consumer_turn_begin / _end (EnigmaConsumerTurnOps.td).
// On CUDA a turn is a named-barrier wait before it and an arrival after it
// (docs/design/consumer-turns.md); what they check is what keeps every
// wait matched by an arrival on every path:
//
// - a turn stands at the top level of a pipeline's consumer region, so all
//   consumer warpgroups take the same turns (the pipeline's control flow
//   is uniform, and each iteration runs the region once);
// - it begins and ends in that block, turns do not nest;
// - nothing in a turn waits for another warpgroup (a threadgroup barrier,
//   a pipeline or a wait for a full stage): that warpgroup may itself be
//   waiting for this turn to end.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

using namespace mlir;

namespace enigma {
namespace {

/// The explicit form: enigma-split-warp-roles moved the consumer region
/// into a loop of the consumer role of an enigma.warp_roles (which later
/// passes may unroll or inline).
bool inSplitConsumer(Operation *op) {
  auto roles = op->getParentOfType<WarpRolesOp>();
  return roles && roles.getConsumer().isAncestor(op->getParentRegion());
}

LogicalResult checkPlace(Operation *op) {
  if (auto pipeline = dyn_cast_or_null<PipelineOp>(op->getParentOp())) {
    if (op->getParentRegion() == &pipeline.getConsumer())
      return success();
    return op->emitOpError("belongs in a pipeline's consumer region, not in "
                           "its producer region");
  }
  if (inSplitConsumer(op))
    return success();
  return op->emitOpError(
      "must stand at the top level of a pipeline's consumer region (not in "
      "a loop or branch inside it, nor outside a pipeline): every consumer "
      "warpgroup must take the same turns");
}

/// An op that waits for other warpgroups of the consumers.
bool waitsForOthers(Operation *op) {
  return isa<BarrierOp, PipelineOp, WarpRolesOp, RingWaitOp,
             ConsumerTurnBeginOp, ConsumerTurnEndOp>(op);
}

} // namespace

LogicalResult ConsumerTurnBeginOp::verify() {
  if (failed(checkPlace(*this)))
    return failure();
  for (Value v : getAfter()) {
    Type element = v.getType();
    if (auto shaped = llvm::dyn_cast<RankedTensorType>(element))
      element = shaped.getElementType();
    if (!element.isF32())
      return emitOpError() << "waits only for f32 scalars and fragments "
                              "(`after`), not "
                           << v.getType();
  }
  for (Operation *next = (*this)->getNextNode(); next;
       next = next->getNextNode()) {
    if (isa<ConsumerTurnEndOp>(next))
      return success();
    if (isa<ConsumerTurnBeginOp>(next))
      return emitOpError("begins a turn that a second "
                         "enigma.consumer_turn_begin enters before it ends: "
                         "turns do not nest")
                 .attachNote(next->getLoc())
             << "the second turn begins here";
    Operation *blocking = nullptr;
    next->walk([&](Operation *inner) {
      if (waitsForOthers(inner) && !blocking)
        blocking = inner;
    });
    if (blocking) {
      InFlightDiagnostic diag = emitOpError()
          << "begins a turn that holds '" << blocking->getName()
          << "', which waits for other consumer warpgroups while they wait "
             "for this turn to end (the GPU would hang): take it out of the "
             "turn";
      diag.attachNote(blocking->getLoc()) << "it is here";
      return diag;
    }
  }
  return emitOpError("begins a turn that does not end in its region: put an "
                     "enigma.consumer_turn_end after it in the same block");
}

LogicalResult ConsumerTurnEndOp::verify() {
  if (failed(checkPlace(*this)))
    return failure();
  for (Operation *prev = (*this)->getPrevNode(); prev;
       prev = prev->getPrevNode()) {
    if (isa<ConsumerTurnBeginOp>(prev))
      return success();
    if (isa<ConsumerTurnEndOp>(prev))
      break;
  }
  return emitOpError("ends a turn that did not begin: no "
                     "enigma.consumer_turn_begin precedes it in its block "
                     "since the last turn ended");
}

bool hasConsumerTurns(Operation *root) {
  bool found = false;
  root->walk([&](ConsumerTurnBeginOp) { found = true; });
  return found;
}

} // namespace enigma
