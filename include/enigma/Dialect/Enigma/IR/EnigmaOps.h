//===- EnigmaOps.h - Ops and attributes of the enigma dialect ---*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMAOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMAOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaDialect.h"
#include "enigma/Support/MatrixExtent.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "enigma/Dialect/Enigma/IR/EnigmaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaAttributes.h.inc"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h.inc"

namespace enigma {
/// The address space of a buffer memref (Device when none is attached).
AddressSpace getAddressSpace(mlir::MemRefType type);
/// A rank-1 dynamic memref of `element` in `space`.
mlir::MemRefType getBufferType(mlir::Type element, AddressSpace space);

/// Marks an integer `arith.addi` / `subi` / `muli` that the user wrote
/// (`+ - *`, unary `-` as `0 - x`) with its type's signedness: "signed",
/// "unsigned", "signed negation" or "unsigned negation". Bounds-checked mode
/// reports such an op whose exact result does not fit
/// (enigma-integer-check); otherwise compilation drops the marks first.
constexpr llvm::StringLiteral kOverflowCheckAttr = "enigma.overflow_check";
} // namespace enigma

#endif
