//===- EnigmaPipelineOps.h - Pipelines with roles ----------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMAPIPELINEOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMAPIPELINEOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

namespace enigma {
/// The verifier every op of the family shares (PipelineOps.cpp).
mlir::LogicalResult verifyPipelineOp(mlir::Operation *op);
} // namespace enigma

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h.inc"

namespace enigma {

/// True when the kernel has pipeline rings (warp-specialised on CUDA).
bool usesPipelines(KernelOp kernel);

/// The rings of a kernel, in program order.
llvm::SmallVector<PipelineRingOp> pipelineRings(KernelOp kernel);

/// Threads CUDA adds to each threadgroup of a kernel with rings: the
/// producer warpgroup (0 without rings).
inline constexpr unsigned kProducerThreads = 128;

/// Whether a producer warpgroup may run `op` besides its copies: pure
/// arithmetic and queries; reads of kernel buffer parameters that no op of
/// the kernel writes (sequence offsets, block tables: every thread reads
/// the same value whenever it reads); bounds-checked mode's writes of its
/// record; and branches holding only such ops.
bool producerMayRun(mlir::Operation *op);

/// Registers of a fragment type per thread on CUDA (one per element of
/// the lane's share), 0 for other types.
int64_t fragmentRegisters(mlir::Type type);

/// Whether `root` holds enigma.consumer_turn_begin ops (ConsumerTurnOps.cpp).
bool hasConsumerTurns(mlir::Operation *root);

} // namespace enigma

#endif
