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
}

class Enigma_Op<string mnemonic, list<Trait> traits = []>
    : Op<Enigma_Dialect, mnemonic, traits>;

#endif
