//===- EnigmaThreadLoopOps.td - Threads run one after another -*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaThreadLoopOps.h.inc; it
// includes only the dialect base.
//
// The form of a kernel after enigma-serialize-threads (the CPU backend's
// lowering of Metal's execution model, docs/design/cpu-execution.md). The
// kernel then carries the unit attribute `enigma.serialized_threads` and its
// body runs once per *threadgroup*:
//
//   - `enigma.thread_loop` runs its body once for every thread of the group
//     (or of one simdgroup), one thread after another; inside, thread
//     queries name the thread being run;
//   - between thread loops stand what every thread of the group must reach
//     together: barriers (then no-ops: the loop order already keeps them),
//     scf.for / scf.if with uniform bounds and conditions, and
//     `enigma.lanes_call`, a simdgroup function over per-thread arrays;
//   - values live across thread loops are stored in per-thread arrays,
//     memref<1024 x T> allocas indexed by thread_index_in_threadgroup.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_THREAD_LOOP_OPS_TD
#define ENIGMA_THREAD_LOOP_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Enigma_ThreadLoopOp : Enigma_Op<"thread_loop", [
    SingleBlock, NoTerminator, RecursiveMemoryEffects]> {
  let summary = "run the body for each thread of the threadgroup in turn";
  let description = [{
    Runs its body once per thread of the threadgroup, in order of
    `thread_index_in_threadgroup`; with `simdgroup %s`, only for the lanes
    of simdgroup `%s` (threads 32 s to 32 s + 31 that exist). Inside the
    body, thread queries (`thread_position_in_grid`, ...) name the thread
    being run. Only in a kernel marked `enigma.serialized_threads`, never
    nested, and holding no barrier or simdgroup function.
  }];
  let arguments = (ins Optional<I32>:$simdgroup);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "(`simdgroup` $simdgroup^)? attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins CArg<"::mlir::Value", "{}">:$simdgroup)>];
}

def Enigma_LanesCallOp : Enigma_Op<"lanes_call"> {
  let summary = "a simdgroup function over per-thread arrays";
  let description = [{
    Calls the CPU prelude's group-level form of a simdgroup / quad function
    (`enigma_cpu_<callee>`, enigma_cpu_simd.h) for simdgroups `[first,
    last)` of a group of `threads` threads. Memref arguments are per-thread
    arrays (operands and results, one element per thread) or the memory a
    simdgroup matrix is loaded from or stored to; scalar arguments are the
    same for every lane. `is_signed` reads integer arrays as signed.
  }];
  let arguments = (ins StrAttr:$callee, Variadic<AnyType>:$args,
                       I32:$threads, I32:$first, I32:$last,
                       UnitAttr:$is_signed);
  let assemblyFormat = [{
    $callee `(` $args `)` `threads` $threads `simdgroups` $first `to` $last
    attr-dict `:` type($args)
  }];
  let hasVerifier = 1;
}

#endif
