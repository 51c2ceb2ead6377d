//===- EnigmaAsyncCopyOps.h - The async copy op family ----------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMAASYNCCOPYOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMAASYNCCOPYOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#define GET_TYPEDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyTypes.h.inc"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h.inc"

namespace enigma {
/// True for the four copy ops (not the wait).
bool isAsyncCopyOp(mlir::Operation *op);
} // namespace enigma

#endif
