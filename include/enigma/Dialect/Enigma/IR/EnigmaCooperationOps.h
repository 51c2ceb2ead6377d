//===- EnigmaCooperationOps.h - The cooperation op family -------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMACOOPERATIONOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMACOOPERATIONOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationAttributes.h.inc"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h.inc"

namespace enigma {

/// True for the atomic ops: rmw, load, store and compare-exchange.
bool isAtomicOp(mlir::Operation *op);

/// True when an atomic op works on 32-bit `memref` (in MSL such memory has
/// an atomic type and its plain loads and stores go through a view; 64-bit
/// memory keeps its plain type and each atomic casts its element's address).
bool isUsedAtomically(mlir::Value memref);

} // namespace enigma

#endif
