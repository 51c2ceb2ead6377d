//===- Divergence.h - Which values differ between threads -------*- C++ -*-===//
//
// A conservative, use-def based check: a value is thread-varying when it is
// computed from an op whose result differs between the threads of a group:
// a varying thread query, an atomic read-modify-write or compare-exchange
// (each thread receives its own old value), a simd / quad scan (each lane
// its own prefix), a simd or quad sum or product (groups of a partial
// threadgroup have fewer lanes), an atomic load of memory the kernel writes
// atomically, or a read of the thread's own registers holding such a value.
// Other values read from memory count as uniform unless their index varies,
// so the check never rejects a kernel that is in fact uniform because of
// data.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_DIVERGENCE_H
#define ENIGMA_DIALECT_ENIGMA_IR_DIVERGENCE_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace enigma {

/// Who must agree: the whole threadgroup, one simdgroup, or one warpgroup
/// (simdgroups 4q .. 4q + 3, which Hopper's warpgroup products run
/// together; `simdgroup_index_in_threadgroup / 4` is the same in all of
/// them).
enum class SyncScope { Threadgroup, Simdgroup, Warpgroup };

/// The op that makes `value` differ between threads that must meet at a
/// barrier of `scope`, or null when `value` is uniform.
mlir::Operation *findVaryingSource(mlir::Value value, SyncScope scope);

/// True when `value` can differ between threads that must meet at a
/// barrier of `scope`.
bool isThreadVarying(mlir::Value value, SyncScope scope);

/// The innermost scf.if / scf.for / scf.while around `op` (inside its kernel)
/// whose condition or bounds are thread-varying, or null.
mlir::Operation *findDivergentRegionOwner(mlir::Operation *op, SyncScope scope);

/// Notes for an error about `owner` (a construct findDivergentRegionOwner
/// returned): where its control flow is and, when the cause is not a plain
/// thread query, the op whose result differs between threads and why.
void attachDivergenceNotes(mlir::InFlightDiagnostic &diag,
                           mlir::Operation *owner, SyncScope scope);

} // namespace enigma

#endif
