//===- EnigmaCheckOps.td - Checks of bounds-checked mode ---*- tablegen -*-===//
#ifndef ENIGMA_CHECK_OPS_TD
#define ENIGMA_CHECK_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Enigma_IndexCheckOp : Enigma_Op<"index_check",
                                    [MemoryEffects<[MemWrite]>]> {
  let summary = "one index of a shaped buffer access is below its extent";
  let description = [{
    Index `dim` of an access `A[y, x]` to a buffer parameter declared with a
    shape (`A: enigma.f32["H", "W"]`) must lie in `[0, extent)`. In
    bounds-checked mode `enigma-bounds-check` replaces the op with that
    check, which records a violation (index, extent, thread) for the
    runtime to report; otherwise compileKernel removes it before the
    optimisation pipeline. It writes nothing, but says it does so that it
    stays where it was traced until then. `buffer`, `shape` (as declared,
    "(H, W)") and `extent_name` ("W", or the number) name it in the report.

    ```mlir
    enigma.index_check %x below %W {dim = 1 : i32, buffer = "A",
        shape = "(H, W)", extent_name = "W"} : i32, i32
    ```
  }];
  let arguments = (ins AnySignlessInteger:$index, AnySignlessInteger:$extent,
                       I32Attr:$dim, StrAttr:$buffer, StrAttr:$shape,
                       StrAttr:$extent_name);
  let assemblyFormat = [{
    $index `below` $extent attr-dict `:` type($index) `,` type($extent)
  }];
  let hasVerifier = 1;
}

#endif
