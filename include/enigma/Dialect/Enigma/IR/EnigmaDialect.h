//===- EnigmaDialect.h - The enigma dialect ---------------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMADIALECT_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMADIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dialect.h"

#include "enigma/Dialect/Enigma/IR/EnigmaDialect.h.inc"

#endif
