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
// unsigned ones (integers are signless in MLIR); on floats min/max store
// the operand when it compares below (above) the element.
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

// A rank-1 memref (device buffer or threadgroup array) of 32-bit integers,
// 64-bit integers or floats. Which operations each target has for each
// type is docs/reference/cooperation.md's table; Metal's limits are judged
// by metalUnsupported (lib/Target/MSL/MetalSupport.cpp).
def Enigma_AtomicMemRef : MemRefRankOf<[I32, I64, F32], [1]>;
def Enigma_AtomicValue : AnyTypeOf<[I32, I64, F32]>;

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

def Enigma_DynamicThreadgroupAllocOp
    : Enigma_Op<"dynamic_threadgroup_alloc", [Enigma_GroupScope]> {
  let summary = "threadgroup memory whose size is given at each launch";
  let description = [{
    Metal's `threadgroup T* name [[threadgroup(0)]]` (sized by
    setThreadgroupMemoryLength), CUDA's `extern __shared__` memory: an
    array shared by the threads of one threadgroup whose length in bytes
    is `bytes`, a hidden u64 parameter of the kernel (marked
    `enigma.threadgroup_memory_bytes`) that the runtime fills with what the
    launch asks for. At most one per kernel, directly in the kernel body;
    16-byte aligned; contents undefined until written.
  }];
  let arguments = (ins I64:$bytes);
  let results = (outs MemRefRankOf<[AnyInteger, AnyFloat], [1]>:$memref);
  let assemblyFormat = "$bytes attr-dict `:` type($memref)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel's dynamic threadgroup array, or null.
    static DynamicThreadgroupAllocOp find(mlir::Operation *kernel);
    /// The name of the hidden parameter that carries the bytes.
    static constexpr const char *kBytesParamName =
        "enigma_threadgroup_memory_bytes";
  }];
}

def Enigma_AtomicRMWOp : Enigma_Op<"atomic_rmw", [
    Enigma_ElementOf<"memref", "value">, Enigma_ElementOf<"memref", "result">]> {
  let summary = "atomic_fetch_<kind>_explicit: returns the old value";
  let arguments = (ins Enigma_AtomicKind:$kind, Enigma_AtomicMemRef:$memref,
                       Index:$index, Enigma_AtomicValue:$value,
                       Enigma_MemoryOrder:$order);
  let results = (outs Enigma_AtomicValue:$result);
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
  let results = (outs Enigma_AtomicValue:$result);
  let assemblyFormat = [{
    $memref `[` $index `]` $order attr-dict `:` type($memref)
  }];
  let hasVerifier = 1;
}

def Enigma_AtomicStoreOp : Enigma_Op<"atomic_store", [
    Enigma_ElementOf<"memref", "value">]> {
  let summary = "atomic_store_explicit";
  let arguments = (ins Enigma_AtomicValue:$value, Enigma_AtomicMemRef:$memref,
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
                       Enigma_AtomicValue:$expected,
                       Enigma_AtomicValue:$desired,
                       Enigma_MemoryOrder:$success_order,
                       Enigma_MemoryOrder:$failure_order);
  let results = (outs Enigma_AtomicValue:$observed, I1:$success);
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
