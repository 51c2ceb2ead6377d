//===- EnigmaFloat8Ops.h - The 8-bit float family ---------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMAFLOAT8OPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMAFLOAT8OPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h.inc"

namespace enigma {
/// Whether `t` (or its element type) is f8E4M3FN or f8E5M2.
bool isFloat8Type(mlir::Type t);
/// "f8e4m3" or "f8e5m2" for an 8-bit float type (or a vector, tensor or
/// memref of one); empty otherwise.
llvm::StringRef float8Name(mlir::Type t);
} // namespace enigma

#endif
