//===- EnigmaCooperationOps.td - The cooperation op family ----------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaCooperationOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
// Threadgroup memory, atomics on device buffers and threadgroup memory, and
// function constants (docs/reference/cooperation.md).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_COOPERATION_OPS_TD
#define ENIGMA_COOPERATION_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Enums are plain I32EnumAttrs (IntegerAttr-based, printed as bare
// keywords): an AttrDef here would generate a second definition of the
// dialect's parseAttribute/printAttribute.

// C++ memory orders of the atomics (Metal's names). Metal itself honours
// only relaxed; see docs/reference/cooperation.md.
def Enigma_MemoryOrder : I32EnumAttr<"MemoryOrder", "atomic memory order", [
    I32EnumAttrCase<"Relaxed", 0, "relaxed">,
    I32EnumAttrCase<"Acquire", 1, "acquire">,
    I32EnumAttrCase<"Release", 2, "release">,
    I32EnumAttrCase<"AcqRel", 3, "acq_rel">
  ]> {
  let cppNamespace = "::enigma";
}

// Read-modify-write kinds. min/max compare as signed integers, umin/umax as
// unsigned ones (integers are signless in MLIR).
def Enigma_AtomicKind : I32EnumAttr<"AtomicKind", "atomic read-modify-write", [
    I32EnumAttrCase<"Exchange", 0, "exchange">,
    I32EnumAttrCase<"Add", 1, "add">,
    I32EnumAttrCase<"Sub", 2, "sub">,
    I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"Max", 4, "max">,
    I32EnumAttrCase<"UMin", 5, "umin">,
    I32EnumAttrCase<"UMax", 6, "umax">,
    I32EnumAttrCase<"And", 7, "and">,
    I32EnumAttrCase<"Or", 8, "or">,
    I32EnumAttrCase<"Xor", 9, "xor">
  ]> {
  let cppNamespace = "::enigma";
}

// A rank-1 memref (device buffer or threadgroup array).
def Enigma_AtomicMemRef : MemRefRankOf<[I32, F32], [1]>;

class Enigma_ElementOf<string memref, string value>
    : TypesMatchWith<value # " has the memref's element type", memref, value,
                     "::llvm::cast<::mlir::MemRefType>($_self).getElementType()">;

def Enigma_ThreadgroupAllocOp : Enigma_Op<"threadgroup_alloc", [Enigma_GroupScope]> {
  let summary = "threadgroup T name[N]: per-threadgroup memory";
  let description = [{
    A statically sized array shared by the threads of one threadgroup (CUDA
    __shared__). Must sit directly in the kernel body; its contents are
    undefined until written. Each array starts on a 16-byte boundary, as
    buffers do, so vector accesses at multiples of their width are aligned.
    The kernel's allocations together, each rounded up to 16 bytes, may not
    exceed 227 KiB, the most any target allows (an sm_90 GPU's block); each
    runtime checks its own device's limit when it loads the kernel (Metal:
    32 KiB).
  }];
  let results = (outs AnyStaticShapeMemRef:$memref);
  let assemblyFormat = "attr-dict `:` type($memref)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes of this allocation's elements (bool takes one byte).
    uint64_t getBytes();
    /// Bytes it occupies: getBytes() rounded up to kAlignment.
    uint64_t getPaddedBytes();
    /// Padded bytes of every threadgroup_alloc directly in `kernel`.
    static uint64_t totalBytes(mlir::Operation *kernel);
    /// Alignment of every array (a float4's size): emitted as alignas.
    static constexpr uint64_t kAlignment = 16;
    /// The most threadgroup memory any target gives one threadgroup (an
    /// sm_90 GPU's opt-in limit per block); runtimes check their own.
    static constexpr uint64_t kMaxBytes = 227 * 1024;
    /// Metal's threadgroup memory limit (every Apple GPU family).
    static constexpr uint64_t kMetalMaxBytes = 32 * 1024;
  }];
}

def Enigma_AtomicRMWOp : Enigma_Op<"atomic_rmw", [
    Enigma_ElementOf<"memref", "value">, Enigma_ElementOf<"memref", "result">]> {
  let summary = "atomic_fetch_<kind>_explicit: returns the old value";
  let arguments = (ins Enigma_AtomicKind:$kind, Enigma_AtomicMemRef:$memref,
                       Index:$index, AnyTypeOf<[I32, F32]>:$value,
                       Enigma_MemoryOrder:$order);
  let results = (outs AnyTypeOf<[I32, F32]>:$result);
  let assemblyFormat = [{
    $kind $memref `[` $index `]` `,` $value $order attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

def Enigma_AtomicLoadOp : Enigma_Op<"atomic_load", [
    Enigma_ElementOf<"memref", "result">]> {
  let summary = "atomic_load_explicit";
  let arguments = (ins Enigma_AtomicMemRef:$memref, Index:$index,
                       Enigma_MemoryOrder:$order);
  let results = (outs AnyTypeOf<[I32, F32]>:$result);
  let assemblyFormat = [{
    $memref `[` $index `]` $order attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

def Enigma_AtomicStoreOp : Enigma_Op<"atomic_store", [
    Enigma_ElementOf<"memref", "value">]> {
  let summary = "atomic_store_explicit";
  let arguments = (ins AnyTypeOf<[I32, F32]>:$value, Enigma_AtomicMemRef:$memref,
                       Index:$index, Enigma_MemoryOrder:$order);
  let assemblyFormat = [{
    $value `,` $memref `[` $index `]` $order attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

def Enigma_AtomicCompareExchangeOp : Enigma_Op<"atomic_compare_exchange_weak", [
    Enigma_ElementOf<"memref", "expected">, Enigma_ElementOf<"memref", "desired">,
    Enigma_ElementOf<"memref", "observed">]> {
  let summary = "atomic_compare_exchange_weak_explicit";
  let description = [{
    Stores `desired` if the element equals `expected`. Returns the value
    found there (`observed`: `expected` itself on success) and whether the
    store happened. Every backend may fail spuriously, as Metal's weak
    compare-exchange may; the CPU and CUDA backends never do.
  }];
  let arguments = (ins Enigma_AtomicMemRef:$memref, Index:$index,
                       AnyTypeOf<[I32, F32]>:$expected,
                       AnyTypeOf<[I32, F32]>:$desired,
                       Enigma_MemoryOrder:$success_order,
                       Enigma_MemoryOrder:$failure_order);
  let results = (outs AnyTypeOf<[I32, F32]>:$observed, I1:$success);
  let assemblyFormat = [{
    $memref `[` $index `]` `,` $expected `,` $desired $success_order
    $failure_order attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

def Enigma_FunctionConstantOp : Enigma_Op<"function_constant", [Pure]> {
  let summary = "a Metal function constant, given at dispatch";
  let description = [{
    `constant T name [[function_constant(index)]]`: a value fixed when the
    pipeline is created (Metal) or the kernel is compiled for a dispatch
    (CPU, CUDA). `dtype` keeps the signedness the signless result type
    lacks; every use of one index must agree on it.
  }];
  let arguments = (ins I32Attr:$index, StrAttr:$dtype);
  let results = (outs AnyTypeOf<[AnyInteger, F32, F16, BF16]>:$result);
  let assemblyFormat = "$index $dtype attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif
