//===- EnigmaThreadOps.td - Thread and grid queries --------*- tablegen -*-===//
#ifndef ENIGMA_THREAD_OPS_TD
#define ENIGMA_THREAD_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "enigma/Dialect/Enigma/IR/EnigmaAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Every query returns a Metal `uint` (i32, unsigned by convention) and must
// sit inside an enigma.kernel. `uniform` says whether all threads of a
// threadgroup see the same value (used by the divergence check of barriers).
class Enigma_ThreadQueryOp<string mnemonic, string metalAttr, bit uniform>
    : Enigma_Op<mnemonic, [Pure]> {
  let results = (outs I32:$result);
  let hasVerifier = 1;
  code queryClassDecl = [{
    static constexpr ::llvm::StringLiteral getMetalAttribute() {
      return ::llvm::StringLiteral("}] # metalAttr # [{");
    }
    static constexpr bool isUniformInThreadgroup() { return }] #
      !if(uniform, "true", "false") # [{; }
  }];
}

class Enigma_DimQueryOp<string mnemonic, string metalAttr, bit uniform>
    : Enigma_ThreadQueryOp<mnemonic, metalAttr, uniform> {
  let summary = "Metal [[" # metalAttr # "]] along one dimension";
  let arguments = (ins Enigma_DimAttr:$dim);
  let assemblyFormat = "$dim attr-dict";
  let extraClassDeclaration = queryClassDecl # [{ static constexpr bool hasDim() { return true; } }];
}

class Enigma_ScalarQueryOp<string mnemonic, string metalAttr, bit uniform>
    : Enigma_ThreadQueryOp<mnemonic, metalAttr, uniform> {
  let summary = "Metal [[" # metalAttr # "]]";
  let assemblyFormat = "attr-dict";
  let extraClassDeclaration = queryClassDecl # [{ static constexpr bool hasDim() { return false; } }];
}

def Enigma_ThreadPositionInGridOp
    : Enigma_DimQueryOp<"thread_position_in_grid", "thread_position_in_grid", 0>;
def Enigma_ThreadPositionInThreadgroupOp
    : Enigma_DimQueryOp<"thread_position_in_threadgroup",
                        "thread_position_in_threadgroup", 0>;
def Enigma_ThreadgroupPositionInGridOp
    : Enigma_DimQueryOp<"threadgroup_position_in_grid",
                        "threadgroup_position_in_grid", 1>;
def Enigma_ThreadsPerThreadgroupOp
    : Enigma_DimQueryOp<"threads_per_threadgroup", "threads_per_threadgroup", 1>;
def Enigma_ThreadsPerGridOp
    : Enigma_DimQueryOp<"threads_per_grid", "threads_per_grid", 1>;
def Enigma_ThreadgroupsPerGridOp
    : Enigma_DimQueryOp<"threadgroups_per_grid", "threadgroups_per_grid", 1>;

def Enigma_ThreadIndexInThreadgroupOp
    : Enigma_ScalarQueryOp<"thread_index_in_threadgroup",
                           "thread_index_in_threadgroup", 0>;
def Enigma_ThreadIndexInSimdgroupOp
    : Enigma_ScalarQueryOp<"thread_index_in_simdgroup",
                           "thread_index_in_simdgroup", 0>;
def Enigma_SimdgroupIndexInThreadgroupOp
    : Enigma_ScalarQueryOp<"simdgroup_index_in_threadgroup",
                           "simdgroup_index_in_threadgroup", 0>;
def Enigma_ThreadsPerSimdgroupOp
    : Enigma_ScalarQueryOp<"threads_per_simdgroup", "threads_per_simdgroup", 1>;
def Enigma_SimdgroupsPerThreadgroupOp
    : Enigma_ScalarQueryOp<"simdgroups_per_threadgroup",
                           "simdgroups_per_threadgroup", 1>;

#endif
