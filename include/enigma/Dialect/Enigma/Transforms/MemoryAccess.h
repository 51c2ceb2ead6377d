//===- MemoryAccess.h - What an op reads or writes, and where --*- C++ -*-===//
//
// The bounds-check pass and the pre-dispatch index analysis both need to
// know, for any op, which rank-1 memref it touches at which index. Known ops
// (memref, vector, enigma atomics) are described exactly; any other op with
// one rank-1 memref operand and one index operand is taken as touching that
// one element, so new access ops are covered without changes here.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_TRANSFORMS_MEMORYACCESS_H
#define ENIGMA_DIALECT_ENIGMA_TRANSFORMS_MEMORYACCESS_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace enigma {

struct MemoryAccess {
  mlir::Value memref;
  mlir::Value index;   // of the first element touched
  unsigned extent = 1; // elements touched from `index` on
  std::string kind;    // "load", "store", "vector_load", "atomic_rmw", ...
};

/// The access `op` makes, or nothing when it touches no rank-1 memref
/// element by index (or is a simdgroup-wide op, which is not checked).
std::optional<MemoryAccess> describeMemoryAccess(mlir::Operation *op);

/// "file:line" of `loc` (looking through names, call sites and fused
/// locations), or "" when it has none.
std::string describeLocation(mlir::Location loc);

} // namespace enigma

#endif
