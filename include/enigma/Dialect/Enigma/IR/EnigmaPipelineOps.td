//===- EnigmaPipelineOps.td - Pipelines with roles ---------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaPipelineOps.h.inc; it
// includes only the dialect base.
//
// Warp specialisation as a construct with a sequential meaning
// (docs/design/warp-specialization.md, docs/reference/pipelines.md):
//
//   %ring = enigma.pipeline_ring %a_tiles, %b_tiles {stages = 4, ...}
//   %acc = enigma.pipeline %ring [%lb, %ub) iter_args(%z = %zero : ...)
//     producer {
//     ^bb0(%i: index, %slot: index):
//       enigma.stage_copy %A[%row, %col] of (%m, %k, %lda)
//           into %ring[%slot] {buffer = 0, ...}
//       enigma.pipeline_yield
//     } consumer {
//     ^bb0(%i: index, %slot: index, %acc: tensor<16x256xf32>):
//       ... any kernel code reading stage %slot of the ring's buffers ...
//       enigma.pipeline_yield %next
//     }
//
// means `for i in [lb, ub): producer(i); consumer(i)`, where the producer
// copies tiles into one stage (slot) of the ring's buffers and the consumer
// reads that stage. Because a producer region only copies (it reads nothing
// the consumers write) and a consumer reads only its own iteration's stage,
// the producer may run up to `stages` iterations ahead: that is how every
// target runs it. The CPU and Metal run it as a software pipeline of the
// whole threadgroup (enigma-lower-pipelines); CUDA on sm_90 adds a producer
// warpgroup that issues the copies through the Tensor Memory Accelerator and
// talks to the consumer warps through mbarriers (enigma-split-warp-roles,
// which makes the explicit form below).
//
// The explicit form (`enigma.warp_roles` and the `ring_*` ops) names what
// the GPU needs: the producer acquires a free stage, copies and commits the
// bytes the stage expects; the consumers wait for a full stage and release
// it. Its verifier checks that every consumer wait has a producer commit
// under the same loops and that a commit expects exactly its copies' bytes.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_PIPELINE_OPS_TD
#define ENIGMA_PIPELINE_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Enigma_RingBarriers : MemRefRankOf<[I64], [1]>;
def Enigma_StageMemRef : MemRefRankOf<[F32, F16, BF16, I8, I16, I32,
                                          F8E4M3FN, F8E5M2], [1]>;

// The shared verifier of the family (PipelineOps.cpp).
class Enigma_PipelineOpBase<string mnemonic, list<Trait> traits = []>
    : Enigma_Op<mnemonic, traits> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::enigma::verifyPipelineOp(getOperation());
    }
  }];
}

def Enigma_PipelineRingOp : Enigma_PipelineOpBase<"pipeline_ring", [
    Enigma_GroupScope, MemoryEffects<[MemAlloc]>]> {
  let summary = "a ring of `stages` buffers and the barriers that guard them";
  let description = [{
    Each of `buffers` (threadgroup arrays made by enigma.threadgroup_alloc)
    holds `stages` slots of equal size; slot `s` of a buffer is its elements
    `[s * n / stages, (s + 1) * n / stages)`. enigma.pipeline ops fill the
    slots (their producer regions) and read them (their consumer regions).

    The result is the ring's barriers: `stages` "full" barriers, then
    `stages` "empty" barriers. Only CUDA uses them (mbarriers in shared
    memory); elsewhere a pipeline is a software pipeline of the whole
    threadgroup and they are not allocated.

    The roles of a CUDA kernel with rings: the threadgroup's threads
    (the consumers, a multiple of 128 set by enigma.threadgroup_size) and
    one producer warpgroup added at launch. `producer_registers` and
    `consumer_registers` are the registers per thread each role gets
    (setmaxnreg); `cluster` threadgroups of consecutive x positions form a
    thread-block cluster whose copies marked `multicast` are shared. Every
    ring of a kernel has the same roles.
  }];
  let arguments = (ins Variadic<Enigma_StageMemRef>:$buffers,
                       ConfinedAttr<I64Attr, [IntMinValue<2>,
                                              IntMaxValue<16>]>:$stages,
                       DefaultValuedAttr<I64Attr, "40">:$producer_registers,
                       DefaultValuedAttr<I64Attr, "232">:$consumer_registers,
                       DefaultValuedAttr<I64Attr, "1">:$cluster);
  let results = (outs Enigma_RingBarriers:$barriers);
  let assemblyFormat = [{
    $buffers attr-dict `:` type($buffers) `->` type($barriers)
  }];
  let extraClassDeclaration = [{
    /// Elements of one slot of buffer `i`.
    int64_t getSlotElements(unsigned i);
    /// Bytes of shared memory the ring's barriers take on CUDA.
    int64_t getBarrierBytes() { return 16 * getStages(); }
  }];
}

def Enigma_PipelineOp : Enigma_PipelineOpBase<"pipeline", [
    RecursiveMemoryEffects]> {
  let summary = "for i in [lower, upper): producer(i); consumer(i), on a ring";
  let description = [{
    The producer region (block arguments: the iteration `i` and the ring
    slot it fills) holds only enigma.stage_copy ops into that slot and
    pure arithmetic on values every thread shares. The consumer region
    (arguments: `i`, the same slot, then the carried values) is any kernel
    code; it reads the slot's stage and yields the next carried values.
    The results are the carried values after the last iteration.

    Meaning: iteration by iteration, the whole threadgroup runs the
    producer region and then the consumer region. A target may run
    producers up to `stages` iterations ahead of the consumers, which is
    the same because producers read nothing consumers write and each
    consumer reads only its own stage.

    The op stands directly in the kernel body or in scf.for / scf.if whose
    bounds and conditions are the same in every thread; the producer may
    use only kernel parameters, the threadgroup's position, the counters
    of enclosing loops and arithmetic on those (a producer warpgroup on
    CUDA computes them itself). Carried fragments may be in flight
    (asynchronous products) at the end of a consumer region: the stage is
    then released once the next iteration's first asynchronous product
    has completed them, and after the loop once they are waited for.

    `consumer_groups` = G > 1 (docs/design/consumer-groups.md): the
    threadgroup's warpgroups (128 threads each) form G groups, warpgroup w
    in group w mod G, and iteration i runs the consumer region in group
    (i - lower) mod G only; in the others the carried values pass
    unchanged. Each group thus carries its own values over every G-th
    iteration (partial sums of a K loop, added afterwards). The kernel
    must run in threadgroups of a multiple of 128 G threads.
  }];
  let arguments = (ins Enigma_RingBarriers:$ring, Index:$lower, Index:$upper,
                       Variadic<AnyType>:$inits,
                       DefaultValuedAttr<I64Attr, "1">:$consumer_groups);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumer);
  let assemblyFormat = [{
    $ring `[` $lower `,` $upper `)` (`iter_args` `(` $inits^ `:`
    type($inits) `)`)? `producer` $producer `consumer` $consumer attr-dict
    `:` type($ring) (`->` type($results)^)?
  }];
  let extraClassDeclaration = [{
    PipelineRingOp getRingOp();
  }];
}

def Enigma_PipelineYieldOp : Enigma_PipelineOpBase<"pipeline_yield", [
    Pure, Terminator, ParentOneOf<["PipelineOp", "WarpRolesOp"]>]> {
  let summary = "ends a producer or consumer region";
  let description = [{
    In a consumer region: the carried values of the next iteration. A
    producer region and the regions of enigma.warp_roles yield nothing.
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Enigma_StageCopyOp : Enigma_PipelineOpBase<"stage_copy"> {
  let summary = "a box of a device matrix into one stage of a ring buffer";
  let description = [{
    Views `src` as a `rows x cols` matrix with rows `ld` elements apart and
    copies the `box_rows x box_cols` box whose element (0, 0) is (`row`,
    `col`) into slot `slot` of the ring's buffer `buffer`, from element
    `offset` of the slot on. Elements outside the matrix become 0 (their
    memory is not read). Box element (r, c) lands at

      slot start + offset + (c / bc) * block_stride + swizzle(r * bc + c % bc)

    with `bc` = `block_cols` (default `box_cols`: one block) and
    `block_stride` (default `box_rows * bc`): columns in blocks of `bc`,
    each a dense `box_rows x bc` tile swizzled inside itself (Hopper's
    128-byte swizzle is Swizzle(3, log2(16 / element bytes), 3) on rows of
    128 bytes).

    In a producer region `slot` is the region's slot; in the explicit form
    it is the slot an enigma.ring_acquire gave. The operands must be the
    same in every thread. `multicast`: the copy is the same in every
    threadgroup of the ring's cluster, which CUDA then loads once per
    cluster (each threadgroup a share of the rows, delivered to all);
    elsewhere it is an ordinary copy.

    `transpose` (32-bit elements, no multicast): the stage holds the
    transpose of the box, a `box_cols x box_rows` tile: box element (r, c)
    lands where element (c, r) of an untransposed copy of that tile would,

      slot start + offset + (r / bc) * block_stride + swizzle(c * bc + r % bc)

    with `bc` = `block_cols` (default `box_rows`) and `block_stride`
    (default `box_cols * bc`). A `k x n` matrix's box then lands K-major,
    as the TMA copy of the `n x k` matrix would write it (what TF32 wgmma
    reads). The TMA cannot transpose: CUDA copies it with the producer
    warpgroup's registers and arrives on the stage's full barrier without
    transaction bytes (docs/design/tf32.md).
  }];
  // It writes the ring's buffers (through the ring) and, on CUDA, counts
  // on its barriers: effects on the ring keep it in place and alive.
  let arguments = (ins Arg<Enigma_RingBarriers, "", [MemRead, MemWrite]>:$ring,
                       Index:$slot,
                       Arg<Enigma_StageMemRef, "", [MemRead]>:$src,
                       Index:$row, Index:$col, Index:$rows, Index:$cols,
                       Index:$ld,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$buffer,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$offset,
                       ConfinedAttr<I64Attr, [IntPositive]>:$box_rows,
                       ConfinedAttr<I64Attr, [IntPositive]>:$box_cols,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$block_cols,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$block_stride,
                       OptionalAttr<DenseI32ArrayAttr>:$swizzle,
                       UnitAttr:$multicast,
                       UnitAttr:$transpose);
  let assemblyFormat = [{
    $src `[` $row `,` $col `]` `of` `(` $rows `,` $cols `,` $ld `)` `into`
    $ring `[` $slot `]` attr-dict `:` type($src) `,` type($ring)
  }];
  let extraClassDeclaration = [{
    /// Bytes the copy writes into the stage (the whole box).
    int64_t getBytes();
    /// Bytes it delivers through a full barrier's transaction count (the
    /// TMA's): none for a transposing copy, whose producer threads arrive.
    int64_t getTransactionBytes() { return getTranspose() ? 0 : getBytes(); }
    /// The tile the stage holds: the box, or its transpose.
    int64_t getStoredRows() {
      return getTranspose() ? getBoxCols() : getBoxRows();
    }
    int64_t getStoredCols() {
      return getTranspose() ? getBoxRows() : getBoxCols();
    }
    /// Columns per block and elements between blocks (of the stored tile).
    int64_t getBlockColumns() { return getBlockCols().value_or(getStoredCols()); }
    int64_t getBlockElementStride() {
      return getBlockStride().value_or(getStoredRows() * getBlockColumns());
    }
    /// The ring buffer it writes.
    mlir::Value getDestination();
  }];
}

//===----------------------------------------------------------------------===//
// The explicit form (CUDA, after enigma-split-warp-roles)
//===----------------------------------------------------------------------===//

def Enigma_WarpRolesOp : Enigma_PipelineOpBase<"warp_roles", [
    RecursiveMemoryEffects, NoRegionArguments]> {
  let summary = "the producer warpgroup's program and the consumers'";
  let description = [{
    On CUDA a kernel with pipeline rings runs one producer warpgroup
    beside its threadgroup's threads. The producer region is the program
    of the producer's first warp (its other warps wait at the end), with
    the registers `producer_registers` of the kernel's rings; the consumer
    region is the program of the threadgroup's threads, with
    `consumer_registers`. A threadgroup barrier in the consumer region
    synchronises the consumers only. Directly in the kernel body.
  }];
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumer);
  let assemblyFormat = "`producer` $producer `consumer` $consumer attr-dict";
}

def Enigma_RingAcquireOp : Enigma_PipelineOpBase<"ring_acquire"> {
  let summary = "producer: waits until the ring's next slot is free";
  let description = [{
    The producer's next slot in turn (the ring's stages, cyclically) once
    every consumer has released its previous use: CUDA waits on the slot's
    empty barrier at the parity of that use.
  }];
  let arguments = (ins Arg<Enigma_RingBarriers, "", [MemRead, MemWrite]>:$ring);
  let results = (outs Index:$slot);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def Enigma_RingCommitOp : Enigma_PipelineOpBase<"ring_commit"> {
  let summary = "producer: the slot's copies are issued, `bytes` to come";
  let description = [{
    Arrives on the slot's full barrier expecting `bytes` bytes of copies:
    exactly the transaction bytes of the enigma.stage_copy ops into `slot`
    that precede it in its block (the verifier checks this; a transposing
    copy has none, its threads arrive themselves).
  }];
  let arguments = (ins Arg<Enigma_RingBarriers, "", [MemRead, MemWrite]>:$ring,
                       Index:$slot,
                       ConfinedAttr<I64Attr, [IntMinValue<0>]>:$bytes);
  let assemblyFormat = "$ring `[` $slot `]` attr-dict `:` type($ring)";
}

def Enigma_RingWaitOp : Enigma_PipelineOpBase<"ring_wait"> {
  let summary = "consumers: wait until the ring's next slot is full";
  let description = [{
    The consumers' next slot in turn once the producer's copies into it
    are complete: CUDA waits on the slot's full barrier at the parity of
    this use. Every wait needs a producer commit under the same loops.
  }];
  let arguments = (ins Arg<Enigma_RingBarriers, "", [MemRead, MemWrite]>:$ring);
  let results = (outs Index:$slot);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

def Enigma_RingReleaseOp : Enigma_PipelineOpBase<"ring_release"> {
  let summary = "consumers: the oldest slot not yet released is free again";
  let description = [{
    Each consumer warp arrives on the slot's empty barrier (with a
    cluster, on that barrier in every threadgroup of the cluster).
  }];
  let arguments = (ins Arg<Enigma_RingBarriers, "", [MemRead, MemWrite]>:$ring);
  let assemblyFormat = "$ring attr-dict `:` type($ring)";
}

// Turns of the consumer warpgroups (docs/design/consumer-turns.md).
include "enigma/Dialect/Enigma/IR/EnigmaConsumerTurnOps.td"

#endif
