//===- EnigmaDialect.td - The enigma dialect ---------------*- tablegen -*-===//
#ifndef ENIGMA_DIALECT_TD
#define ENIGMA_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Enigma_Dialect : Dialect {
  let name = "enigma";
  let cppNamespace = "::enigma";
  let summary = "Metal-semantics GPU kernels";
  let description = [{
    Kernels with Metal's execution model: a grid of threads split into
    threadgroups, simdgroups of 32 lanes, per-group threadgroup memory.
    Arithmetic, control flow and memory accesses use the upstream arith,
    math, scf and memref dialects; this dialect adds what they lack.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
  // The async copy family defines the dialect's one type (async_event).
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    // Each op family registers its ops and attributes (MathOps.cpp, ...).
    void registerMathOps();
    void registerCooperationOps();
    void registerSimdOps();
    void registerAsyncCopyOps();
    void registerMmaOps();
    void registerThreadLoopOps();
    void registerFloat8Ops();
    void registerPipelineOps();
  }];
}

// Ops executed once per threadgroup rather than per thread (threadgroup
// memory allocations): the CPU backend prints them before its thread loops.
def Enigma_GroupScope : NativeOpTrait<"GroupScope"> {
  let cppNamespace = "::enigma";
}
// Ops whose result depends on other threads' operands (simdgroup and quad
// reductions, shuffles): the CPU backend runs them between thread loops.
def Enigma_Collective : NativeOpTrait<"Collective"> {
  let cppNamespace = "::enigma";
}

class Enigma_Op<string mnemonic, list<Trait> traits = []>
    : Op<Enigma_Dialect, mnemonic, traits>;

#endif
