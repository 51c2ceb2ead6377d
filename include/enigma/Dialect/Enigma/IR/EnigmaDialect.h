//===- EnigmaDialect.h - The enigma dialect ---------------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMADIALECT_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMADIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dialect.h"

#include "mlir/IR/OpDefinition.h"

namespace enigma {
/// Marks ops run once per threadgroup (see EnigmaDialect.td).
template <typename ConcreteType>
class GroupScope : public mlir::OpTrait::TraitBase<ConcreteType, GroupScope> {};
/// Marks ops that combine values across threads (see EnigmaDialect.td).
template <typename ConcreteType>
class Collective : public mlir::OpTrait::TraitBase<ConcreteType, Collective> {};
} // namespace enigma

#include "enigma/Dialect/Enigma/IR/EnigmaDialect.h.inc"

#endif
