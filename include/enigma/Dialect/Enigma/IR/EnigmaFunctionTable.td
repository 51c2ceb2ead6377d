//===- EnigmaFunctionTable.td - Rows of the op families' tables -*- tablegen -*-===//
//
// Classes only (no records), so every family .td may include this file.
// enigma-tblgen -gen-function-table prints a family's rows into
// Enigma<Family>Functions.inc, which the builder, the Python bindings and
// wrappers, and the C-family emitters read (docs/design/op-families.md).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_FUNCTION_TABLE_TD
#define ENIGMA_FUNCTION_TABLE_TD

// One function of the API (enigma.<name> in Python): a row of its family's
// table.
//
// `rule` is how the builder types the operands and the result, one of
// enigma::FunctionRule (include/enigma/Builder/Functions.h):
//   Float             operands promoted to one dtype, integers to f32; same
//                     dtype out
//   FloatPredicate    as Float, a bool (per lane) out
//   Numeric           float or integer operands, each kind its own op
//   Integer           integer operands only; same dtype out
//   IntegerToUnsigned integer operands; the unsigned dtype of their width out
//   Compare           any operands; bool out (ops "arith.cmpf:<predicate>")
//   ExtractBits, InsertBits  Metal's bit-field functions (uint field operands)
//   Vector            float vectors of one dtype and lane count (`lanes`
//                     when non-zero); same type out
//   VectorToScalar    as Vector; the element dtype out
//   VectorAndScalar   as Vector, the last operand a float scalar
//   Pack              a float vector of `lanes` lanes (as f32) -> uint
//   Unpack            a 32-bit integer -> a float vector of `lanes` lanes
//   GroupReduce, GroupScan, GroupBitwise, GroupMinMax, GroupShuffle
//                     simdgroup / quad functions of a scalar (shuffles take
//                     a uint lane operand too)
//   GroupVote         a scalar read as a bool -> bool (simd_any, simd_all)
//   GroupBallot       a scalar read as a bool -> ulong (simd_ballot)
//   GroupLaneQuery    no operand -> the op's bool or ulong (simd_is_first)
//
// The op is `op`, or per operand kind `floatOp` / `signedOp` / `unsignedOp`
// ("identity" returns the operand itself). A record that is also an enigma
// op builds itself when no op is given.
class Enigma_Function<string family, string name, list<string> args,
                      string rule, string doc> {
  string fnFamily = family;
  string fnName = name;
  // Parameter names in Python (the original DSL's where it has the
  // function); "*v" takes any number of positional arguments.
  list<string> fnArgs = args;
  string fnRule = rule;
  string fnDoc = doc;
  string fnOp = "";
  string fnFloatOp = "";
  string fnSignedOp = "";
  string fnUnsignedOp = "";
  int fnLanes = 0;
}

// How the C-family emitters print an op: a call of `metalName` with its
// operands in order (`cudaName` instead under CUDA when set). When the op
// has a `signed` attribute, its first `signedOperands` operands (-1: all) are
// read as the signed type and the result converted back; `alwaysSigned`
// does so for an op that always reads its operands as signed.
class Enigma_Spelling<string metal> {
  string spelledOp = "";
  string metalName = metal;
  string cudaName = "";
  int signedOperands = -1;
  bit alwaysSigned = 0;
}

// An upstream op printed as the call of a Metal function.
class Enigma_UpstreamSpelling<string op, string metal>
    : Enigma_Spelling<metal> {
  let spelledOp = op;
}

#endif
