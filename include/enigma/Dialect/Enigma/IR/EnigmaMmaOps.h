//===- EnigmaMmaOps.h - The matrix multiply-accumulate family ---*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMAMMAOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMAMMAOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

#include "enigma/Dialect/Enigma/IR/EnigmaMmaEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMmaAttributes.h.inc"

namespace enigma {
/// The verifier every op of the family shares (MmaOps.cpp).
mlir::LogicalResult verifyMmaOp(mlir::Operation *op);
} // namespace enigma

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h.inc"

namespace enigma {

/// CuTe's Swizzle<bits, base, shift> of an offset: the `bits` bits `shift`
/// above bit `base` XORed into the bits at `base` (a negative shift reads
/// lower bits). `swizzle` is [bits, base, shift]; empty means none.
inline int64_t applyMmaSwizzle(llvm::ArrayRef<int32_t> swizzle,
                               int64_t offset) {
  if (swizzle.size() != 3 || swizzle[0] == 0)
    return offset;
  int64_t mask = (int64_t(1) << swizzle[0]) - 1;
  int32_t base = swizzle[1], shift = swizzle[2];
  if (shift >= 0)
    return offset ^ ((offset >> shift) & (mask << base));
  return offset ^ ((offset << -shift) & (mask << base));
}

/// True for ops of the family that work on fragments (everything but the
/// tile copy and its commit / wait).
bool isFragmentOp(mlir::Operation *op);

/// True when the kernel computes with fragments (its threadgroups must be
/// whole simdgroups).
bool usesFragments(KernelOp kernel);

/// True when the kernel has warpgroup products (its threadgroups must be
/// whole groups of four simdgroups).
bool usesWarpgroupProducts(KernelOp kernel);

/// The accumulator of `op` when it is an asynchronous product (enigma.mma
/// or enigma.mma_reg with `asynchronous`), else a null value.
mlir::Value asynchronousProductAcc(mlir::Operation *op);

/// log2 of the elements of `element` in a 16-byte chunk: the address bits
/// a tile swizzle must leave alone so that copies and vector loads move
/// whole chunks.
unsigned chunkBits(mlir::Type element);

/// True when `type` is a fragment or row vector (a ranked tensor).
inline bool isFragmentType(mlir::Type type) {
  return llvm::isa<mlir::RankedTensorType>(type);
}

} // namespace enigma

#endif
