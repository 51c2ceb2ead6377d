//===- EnigmaSyncOps.td - Barriers -------------------------*- tablegen -*-===//
#ifndef ENIGMA_SYNC_OPS_TD
#define ENIGMA_SYNC_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "enigma/Dialect/Enigma/IR/EnigmaAttributes.td"

def Enigma_BarrierOp : Enigma_Op<"barrier"> {
  let summary = "threadgroup_barrier(mem_flags)";
  let description = [{
    Every thread of the threadgroup waits here until all have arrived; the
    flags order memory of the named address spaces. Must be reached by all
    threads of the group: the verifier rejects a barrier under a branch or
    loop whose condition depends on the thread's position.
  }];
  let arguments = (ins Enigma_MemFlagsAttr:$flags);
  let assemblyFormat = "$flags attr-dict";
  let hasVerifier = 1;
}

def Enigma_SimdBarrierOp : Enigma_Op<"simd_barrier"> {
  let summary = "simdgroup_barrier(mem_flags)";
  let arguments = (ins Enigma_MemFlagsAttr:$flags);
  let assemblyFormat = "$flags attr-dict";
  let hasVerifier = 1;
}

#endif
