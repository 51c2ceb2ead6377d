//===- Passes.h - Transformations of enigma kernels --------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_TRANSFORMS_PASSES_H
#define ENIGMA_DIALECT_ENIGMA_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace enigma {

class KernelOp;

/// `enigma-bounds-check` (bounds-checked mode, docs/design/bounds-check.md):
/// wraps every access to a kernel buffer or threadgroup array in a check of
/// its index against the real size. An access that fails does not happen
/// (a load gives zero) and the first one is written to a hidden record
/// buffer (enigma/Support/BoundsRecord.h). Appends to each kernel:
///  - per checked buffer a u64 scalar parameter with its element count,
///    marked `enigma.bounds_size_of = <parameter index>`;
///  - the record, a u32 buffer marked `enigma.bounds_record`;
/// and sets the kernel attribute `enigma.bounds_sites`: one dictionary per
/// check (site id = position) with `access`, `buffer`, `location`, `extent`,
/// `param` (-1 for a threadgroup array) and `size` (the array's static size).
std::unique_ptr<mlir::Pass> createBoundsCheckPass();

/// Whether parameter `index` of `kernel` is one the bounds-check pass
/// appended (marked `enigma.bounds_size_of` or `enigma.bounds_record`).
bool isBoundsCheckParam(KernelOp kernel, unsigned index);

/// `enigma-guard-selected-loads` (part of the optimisation pipeline): a load
/// whose value reaches only one arm of an `arith.select` reads element 0
/// where that arm is not taken, so a discarded read (`where(0, A[i - 1],
/// i > 0)`) never leaves its buffer. Observable results do not change.
std::unique_ptr<mlir::Pass> createGuardSelectedLoadsPass();

/// `enigma-serialize-threads` (the CPU backend, docs/design/cpu-execution.md):
/// makes each kernel's body run once per threadgroup, its threads one after
/// another in enigma.thread_loop ops cut at barriers, simdgroup functions and
/// async-copy waits; values live across a cut go through per-thread arrays,
/// simdgroup functions become enigma.lanes_call over those arrays. Marks the
/// kernel `enigma.serialized_threads` (and leaves marked kernels alone).
std::unique_ptr<mlir::Pass> createSerializeThreadsPass();

/// `enigma-lower-pipelines` (CPU and Metal, docs/design/warp-specialization.md):
/// runs each enigma.pipeline as a software pipeline of the whole threadgroup
/// (copies `stages - 1` iterations ahead as enigma.copy_tile_async, a
/// barrier per iteration) and erases the rings.
std::unique_ptr<mlir::Pass> createLowerPipelinesPass();

/// `enigma-split-warp-roles` (CUDA): a kernel with pipeline rings becomes
/// an enigma.warp_roles op whose producer region fills stages
/// (ring_acquire, stage copies, ring_commit) and whose consumer region runs
/// the body with each pipeline waiting for full stages (ring_wait) and
/// releasing them (ring_release).
std::unique_ptr<mlir::Pass> createSplitWarpRolesPass();

/// Registers the passes above with the MLIR pass registry (enigma-opt).
void registerEnigmaTransformPasses();

} // namespace enigma

#endif
