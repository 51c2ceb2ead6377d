//===- Divergence.h - Which values differ between threads -------*- C++ -*-===//
//
// A conservative, use-def based check: a value is thread-varying when it is
// computed from a query whose result differs between the threads of a group.
// Values read from memory count as uniform unless their index varies, so the
// check never rejects a kernel that is in fact uniform because of data.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_DIVERGENCE_H
#define ENIGMA_DIALECT_ENIGMA_IR_DIVERGENCE_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace enigma {

enum class SyncScope { Threadgroup, Simdgroup };

/// True when `value` can differ between threads that must meet at a
/// barrier of `scope`.
bool isThreadVarying(mlir::Value value, SyncScope scope);

/// The innermost scf.if / scf.for / scf.while around `op` (inside its kernel)
/// whose condition or bounds are thread-varying, or null.
mlir::Operation *findDivergentRegionOwner(mlir::Operation *op, SyncScope scope);

} // namespace enigma

#endif
