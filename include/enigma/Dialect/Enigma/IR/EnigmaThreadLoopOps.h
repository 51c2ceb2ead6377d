//===- EnigmaThreadLoopOps.h - Threads run one after another ----*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMATHREADLOOPOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMATHREADLOOPOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h.inc"

namespace enigma {
/// The unit attribute of a kernel whose body runs once per threadgroup, with
/// its threads in enigma.thread_loop ops (enigma-serialize-threads).
constexpr llvm::StringLiteral kSerializedThreadsAttr =
    "enigma.serialized_threads";

/// The size of a per-thread array: Metal's (and every backend's) limit on
/// the threads of a threadgroup.
constexpr int64_t kMaxThreadsPerGroup = 1024;

/// Whether `op` is a thread query whose value differs between the threads
/// of a threadgroup (thread_position_in_grid, ...).
bool isThreadVaryingQuery(mlir::Operation *op);
} // namespace enigma

#endif
