//===- ConsumerBody.h - A pipeline's consumer region, cloned ----*- C++ -*-===//
//
// Both lowerings of enigma.pipeline (the software pipeline of CPU and Metal,
// the consumer role of CUDA) put the consumer region into a loop over the
// iterations; with consumer groups it runs under a guard that picks the
// group whose turn the iteration is (docs/design/consumer-groups.md).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_TRANSFORMS_CONSUMERBODY_H
#define ENIGMA_DIALECT_ENIGMA_TRANSFORMS_CONSUMERBODY_H

#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/IR/Builders.h"

namespace enigma {

/// The consumer region of `op` cloned at the builder's point for iteration
/// `i` on `slot` with the carried values `carried`.
struct ClonedConsumer {
  /// The carried values of the next iteration.
  llvm::SmallVector<mlir::Value> next;
  /// The guard of a pipeline with consumer groups (null without): its
  /// results are `next`; its then-branch holds the region.
  mlir::Operation *guard = nullptr;
};

/// Clones the consumer region; with `consumer_groups` G > 1 inside
/// `if ((simdgroup_index / 4) % G == (i - lower) % G)`, whose else-branch
/// yields `carried` unchanged.
ClonedConsumer cloneConsumer(mlir::OpBuilder &b, PipelineOp op, mlir::Value i,
                             mlir::Value slot, mlir::ValueRange carried);

} // namespace enigma

#endif
