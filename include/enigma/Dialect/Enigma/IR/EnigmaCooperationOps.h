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

/// True when an atomic op works on `memref` (in MSL such memory has an
/// atomic type and its plain loads and stores go through a view).
bool isUsedAtomically(mlir::Value memref);

} // namespace enigma

#endif
