//===- EnigmaFloat8Ops.td - The 8-bit float family -------------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaFloat8Ops.h.inc; it includes
// only the dialect base.
//
// The 8-bit floats are MLIR's builtin f8E4M3FN and f8E5M2 (the OCP formats
// e4m3 and e5m2, docs/design/fp8.md). Upstream arith converts them:
// arith.extf is exact and arith.truncf rounds to nearest even, overflowing
// to NaN (e4m3, which has no infinity) or infinity (e5m2), as APFloat
// folds it. This family adds the conversion that saturates instead.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_FLOAT8_OPS_TD
#define ENIGMA_FLOAT8_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Enigma_WideFloatLike : AnyTypeOf<[
    F32, F16, BF16, VectorOfRankAndType<[1], [F32, F16, BF16]>,
    TensorOf<[F32, F16, BF16]>], "float, half or bfloat (scalar, vector or fragment)">;
def Enigma_Float8Like : AnyTypeOf<[
    F8E4M3FN, F8E5M2, VectorOfRankAndType<[1], [F8E4M3FN, F8E5M2]>,
    TensorOf<[F8E4M3FN, F8E5M2]>], "8-bit float (scalar, vector or fragment)">;

def Enigma_TruncFSatOp : Enigma_Op<"truncf_sat", [Pure]> {
  let summary = "float to 8-bit float, saturating at the largest finite value";
  let description = [{
    Rounds each element of `in` to nearest, ties to even, in the 8-bit
    format of the result; magnitudes beyond its largest finite value
    (448 for f8E4M3FN, 57344 for f8E5M2), infinities included, become that
    value with their sign (OCP's saturation mode, PTX's `.satfinite`). A
    NaN stays NaN. `in` and the result have the same shape: scalars,
    vectors of one length, or fragments of one shape.
  }];
  let arguments = (ins Enigma_WideFloatLike:$in);
  let results = (outs Enigma_Float8Like:$out);
  let hasVerifier = 1;
  // Constants fold to arith.constant (the dialect has no constant
  // materializer of its own).
  let hasCanonicalizeMethod = 1;
  let assemblyFormat = "$in attr-dict `:` type($in) `to` type($out)";
}

#endif // ENIGMA_FLOAT8_OPS_TD
