//===- EnigmaAsyncCopyOps.td - The async copy op family ------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaAsyncCopyOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
// Simdgroup asynchronous copies between device buffers and threadgroup
// memory (Metal's undocumented simdgroup_async_copy, docs/reference/
// async-copy.md). A copy is issued by a whole simdgroup: every lane reaches
// it with the same operands and the copy happens once for the simdgroup.
// It returns an event; enigma.async_copy_wait blocks until the events it is
// given have completed, after which every lane of the simdgroup sees the
// copied elements. Other simdgroups see them after a threadgroup barrier.
//
// Like the simd functions, these ops must not sit under control flow that
// depends on the lane (the verifier rejects it), while a condition that is
// the same for the lanes of a simdgroup, such as
// simdgroup_index_in_threadgroup() == 0, is fine.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_ASYNC_COPY_OPS_TD
#define ENIGMA_ASYNC_COPY_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// The only TypeDef of the dialect: its generated file also defines the
// dialect's parseType / printType.
def Enigma_AsyncEventType : TypeDef<Enigma_Dialect, "AsyncEvent"> {
  let mnemonic = "async_event";
  let summary = "completion handle of a simdgroup async copy";
  let description = [{
    What an async copy returns and enigma.async_copy_wait takes. It has no
    value a kernel can compute with; MSL holds Metal's event pointer, CUDA
    the number of the cp.async group the copy committed, host C++ a dummy.
  }];
}

def Enigma_AsyncCopyMemRef : MemRefRankOf<[AnyType], [1]>;

// Shared verifier (AsyncCopyOps.cpp): inside a kernel, not under
// lane-dependent control flow, memory in the direction's address spaces,
// one element type.
class Enigma_AsyncCopyOpBase<string mnemonic, list<Trait> traits = []>
    : Enigma_Op<mnemonic, traits> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::enigma::verifyAsyncCopyOp(getOperation());
    }
  }];
}

// `dir`: d2t (device -> threadgroup) or t2d (threadgroup -> device).
class Enigma_AsyncCopy1dOp<string dir, string what>
    : Enigma_AsyncCopyOpBase<"async_copy_1d_" # dir> {
  let summary = "1-D simdgroup async copy, " # what;
  let description = [{
    Copies `count` consecutive elements: `dst[dst_offset + i] =
    src[src_offset + i]` for `i` in `0..count-1`, asynchronously, on behalf
    of the whole simdgroup. The elements are defined in `dst` once the
    returned event has been waited for (enigma.async_copy_wait).
  }];
  let arguments = (ins Arg<Enigma_AsyncCopyMemRef, "", [MemWrite]>:$dst,
                       Index:$dst_offset,
                       Arg<Enigma_AsyncCopyMemRef, "", [MemRead]>:$src,
                       Index:$src_offset, Index:$count);
  let results = (outs Enigma_AsyncEventType:$event);
  let assemblyFormat = [{
    $dst `[` $dst_offset `]` `,` $src `[` $src_offset `]` `,` $count attr-dict
    `:` type($dst) `,` type($src)
  }];
}

class Enigma_AsyncCopy2dOp<string dir, string what>
    : Enigma_AsyncCopyOpBase<"async_copy_2d_" # dir> {
  let summary = "2-D (tile) simdgroup async copy, " # what;
  let description = [{
    Copies a tile of `tile_rows` rows of `tile_cols` elements:
    `dst[dst_offset + r * dst_elements_per_row + c] =
    src[src_offset + r * src_elements_per_row + c]` for `r` in
    `0..tile_rows-1` and `c` in `0..tile_cols-1`, asynchronously, on behalf
    of the whole simdgroup.
  }];
  let arguments = (ins Arg<Enigma_AsyncCopyMemRef, "", [MemWrite]>:$dst,
                       Index:$dst_offset, Index:$dst_elements_per_row,
                       Arg<Enigma_AsyncCopyMemRef, "", [MemRead]>:$src,
                       Index:$src_offset, Index:$src_elements_per_row,
                       Index:$tile_cols, Index:$tile_rows);
  let results = (outs Enigma_AsyncEventType:$event);
  let assemblyFormat = [{
    $dst `[` $dst_offset `]` `,` $dst_elements_per_row `,` $src `[`
    $src_offset `]` `,` $src_elements_per_row `,` $tile_cols `x` $tile_rows
    attr-dict `:` type($dst) `,` type($src)
  }];
}

def Enigma_AsyncCopy1dD2TOp
    : Enigma_AsyncCopy1dOp<"d2t", "device -> threadgroup">;
def Enigma_AsyncCopy1dT2DOp
    : Enigma_AsyncCopy1dOp<"t2d", "threadgroup -> device">;
def Enigma_AsyncCopy2dD2TOp
    : Enigma_AsyncCopy2dOp<"d2t", "device -> threadgroup">;
def Enigma_AsyncCopy2dT2DOp
    : Enigma_AsyncCopy2dOp<"t2d", "threadgroup -> device">;

// Collective: the CPU backend splits its thread loops here, so every lane's
// share of the copies is done before any lane goes on.
def Enigma_AsyncCopyWaitOp
    : Enigma_AsyncCopyOpBase<"async_copy_wait", [
        Enigma_Collective, MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for simdgroup async copies";
  let description = [{
    Blocks the simdgroup until the copies of every listed event have
    completed; afterwards every lane of the simdgroup sees their elements.
  }];
  let arguments = (ins Variadic<Enigma_AsyncEventType>:$events);
  let assemblyFormat = "$events attr-dict";
}

#endif
