//===- CudaPipelines.h - Rings, roles and stage copies in CUDA --*- C++ -*-===//
//
// How the CUDA text prints the explicit form of pipelines
// (enigma-split-warp-roles; docs/design/warp-specialization.md) through
// enigma_cuda_pipeline.cuh: a ring's barriers and state, the producer
// warpgroup and the consumers as one if/else with their register counts
// (setmaxnreg), the ring operations, and the stage copies through the
// TMA (with the tensor map the runtime encodes) or cp.async.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_TARGET_CUDA_CUDAPIPELINES_H
#define ENIGMA_LIB_TARGET_CUDA_CUDAPIPELINES_H

#include "CudaTensorMaps.h"

#include "../CFamily/CFamilyEmitter.h"

#include <string>

namespace enigma {

/// What the pipeline printer needs from the kernel.
struct CudaPipelineContext {
  const CudaTensorMapPlan &maps;
  /// The consumers (the threadgroup's own threads) and the cluster.
  uint64_t consumerThreads = 0;
  int64_t cluster = 1;
  /// Expression of the thread's index in its block.
  std::string threadIndex;
  /// Bounds-checked mode: the record parameter's index (-1: none) and its
  /// name as the current printing pass spells it (empty: none).
  int boundsRecordIndex = -1;
  std::string boundsRecord;
  /// The printer's flag, set while the producer's TMA form is printed: its
  /// first thread alone runs it, and copies and commits print without the
  /// cp.async fallback.
  bool *tmaProducer = nullptr;
};

/// Prints `op` if it is one of the pipeline family's explicit ops.
mlir::LogicalResult emitCudaPipelineOp(CFamilyEmitter &e, mlir::Operation *op,
                                       const CudaPipelineContext &context,
                                       bool &handled);

/// Whether `op` is in the consumer region of an enigma.warp_roles.
bool inConsumerRole(mlir::Operation *op);

} // namespace enigma

#endif
