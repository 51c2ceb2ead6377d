//===- EnigmaConsumerTurnOps.td - Turns of consumer warpgroups -*- tablegen -*-===//
//
// Included by EnigmaPipelineOps.td: the ops belong to the pipeline family
// (generated into its .h.inc) but live in their own file, with their
// verifiers in ConsumerTurnOps.cpp (docs/design/consumer-turns.md).
//
//   consumer {
//   ^bb0(%i: index, %slot: index, ...):
//     enigma.consumer_turn_begin
//     %s = enigma.mma ... {asynchronous}     // issued in this warpgroup's turn
//     enigma.consumer_turn_end
//     ...                                    // softmax: the other's turn
//   }
//
// The consumer warpgroups (128 threads each) take turns round-robin: the
// code between a begin and its end runs in warpgroup 0, then 1, ..., then
// 0 again. Sequentially (and on the CPU and Metal) the ops mean nothing.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CONSUMER_TURN_OPS_TD
#define ENIGMA_CONSUMER_TURN_OPS_TD

class Enigma_ConsumerTurnOpBase<string mnemonic>
    : Enigma_Op<mnemonic, [MemoryEffects<[MemRead, MemWrite]>]> {
  let hasVerifier = 1;
}

def Enigma_ConsumerTurnBeginOp
    : Enigma_ConsumerTurnOpBase<"consumer_turn_begin"> {
  let summary = "waits for this consumer warpgroup's turn";
  let description = [{
    Begins a turn: the ops up to the matching enigma.consumer_turn_end run
    in one consumer warpgroup at a time, the warpgroups in order (0, 1,
    ..., 0, ...). Its meaning is nothing: the results are those of the
    kernel without it. On CUDA with a producer warpgroup it orders the
    tensor-core work of the consumer warpgroups (warpgroup w waits on
    named barrier 2 + w for the end of warpgroup w - 1's turn), so that
    one warpgroup's products run while another computes in registers.

    It stands at the top level of a pipeline's consumer region (uniform
    control flow), followed in that block by its
    enigma.consumer_turn_end, with no turn, threadgroup barrier or
    pipeline in between. The compiler adds the first turn's arrival when
    the consumers start and takes the last one when they end, so every
    warpgroup meets its waits whatever the number of iterations.

    `after` (f32 scalars or fragments, optional): values computed before
    the turn that must be complete when it begins. They change nothing
    but the schedule: on CUDA the wait depends on their registers, so that
    the assembler cannot sink their computation (a softmax) into the turn.

    ```mlir
    enigma.consumer_turn_begin after(%row_sums : tensor<16xf32>)
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$after);
  let assemblyFormat = [{
    (`after` `(` $after^ `:` type($after) `)`)? attr-dict
  }];
}

def Enigma_ConsumerTurnEndOp : Enigma_ConsumerTurnOpBase<"consumer_turn_end"> {
  let summary = "ends the turn; the next consumer warpgroup's begins";
  let description = [{
    Ends the turn the preceding enigma.consumer_turn_begin of its block
    began: on CUDA the warpgroup arrives (without waiting) on the named
    barrier of the next warpgroup's turn. Asynchronous products issued in
    the turn may still run after it.
  }];
  let assemblyFormat = "attr-dict";
}

#endif
