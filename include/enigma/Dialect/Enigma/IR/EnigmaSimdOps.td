//===- EnigmaSimdOps.td - The simd op family ----------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaSimdOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
// SIMD-group (32 lanes) and quad-group (4 lanes) reductions, scans and
// shuffles. Every op's mnemonic is the Metal function it prints as
// (`enigma.simd_sum` -> `simd_sum(x)`). Lanes are consecutive linear thread
// indices of the threadgroup: lane = thread_index_in_threadgroup % 32, quad
// = thread_index_in_threadgroup / 4. Lanes that do not exist (the tail of a
// partial threadgroup) take no part.
//
// All of them carry the Collective trait (the CPU backend runs them between
// its thread loops) and must be reached by every lane of the simdgroup: the
// verifier rejects one under control flow that depends on the lane.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SIMD_OPS_TD
#define ENIGMA_SIMD_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "enigma/Dialect/Enigma/IR/EnigmaFunctionTable.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Enigma_SimdArithType : AnyTypeOf<[I8, I16, I32, I64, F16, F32, BF16],
    "integer or float scalar">;
def Enigma_SimdBitsType : AnyTypeOf<[I8, I16, I32, I64], "integer scalar">;
def Enigma_SimdAnyType : AnyTypeOf<[I1, I8, I16, I32, I64, F16, F32, BF16],
    "bool, integer or float scalar">;

// Shared verifier (SimdOps.cpp): inside a kernel, not under lane-dependent
// control flow. The mnemonic is the Metal function's name.
class Enigma_SimdGroupOp<string mnemonic, list<Trait> traits = []>
    : Enigma_Op<mnemonic, !listconcat(traits, [Enigma_Collective,
                                               NoMemoryEffect])>,
      Enigma_Spelling<mnemonic> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::enigma::verifySimdGroupOp(getOperation());
    }
  }];
}

// x -> one value per lane: a reduction (every lane gets the result) or a
// scan (each lane gets the prefix up to itself).
class Enigma_SimdReduceOp<string mnemonic, Type operandType, string what>
    : Enigma_SimdGroupOp<mnemonic, [AllTypesMatch<["value", "result"]>]> {
  let summary = mnemonic # "(x): " # what;
  let description = [{
    Combines `value` over the active lanes of the lane's group (simdgroup of
    32 lanes or quad of 4). Reductions give every lane the same result;
    prefix (scan) ops give each lane the combination of the lanes below it
    (exclusive) or up to and including it (inclusive), the empty combination
    being 0 for sums and 1 for products. Integer arithmetic wraps.
  }];
  let arguments = (ins operandType:$value);
  let results = (outs operandType:$result);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

// min / max compare integers as signed when `is_signed` is present.
class Enigma_SimdMinMaxOp<string mnemonic, string what>
    : Enigma_SimdGroupOp<mnemonic, [AllTypesMatch<["value", "result"]>]> {
  let summary = mnemonic # "(x): " # what;
  let description = [{
    The smallest / largest `value` over the active lanes of the group.
    Integers compare as signed numbers when `is_signed` is set (the values
    are signless), else as unsigned numbers.
  }];
  let arguments = (ins Enigma_SimdArithType:$value, UnitAttr:$is_signed);
  let results = (outs Enigma_SimdArithType:$result);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

// (x, lane operand) -> the value of another lane.
class Enigma_SimdShuffleOp<string mnemonic, string what>
    : Enigma_SimdGroupOp<mnemonic, [AllTypesMatch<["value", "result"]>]> {
  let summary = mnemonic # "(x, " # what # ")";
  let description = [{
    Reads `value` of another lane of the group. `shuffle` / `broadcast`
    read lane `lane % width`; `shuffle_xor` reads lane `me ^ (mask % width)`;
    `shuffle_up` reads `me - delta` and `shuffle_down` reads `me + delta`.
    A lane whose source lane is below 0, past the group's end, or does not
    exist (partial threadgroup) gets its own `value`.
  }];
  let arguments = (ins Enigma_SimdAnyType:$value, I32:$lane);
  let results = (outs Enigma_SimdAnyType:$result);
  let assemblyFormat = "$value `,` $lane attr-dict `:` type($value)";
}

// The function `<group>_<op>` of the simd family (the op's own row).
class Enigma_GroupFunction<string group, string op, list<string> args,
                           string rule, string doc>
    : Enigma_Function<"simd", group # "_" # op, args, rule,
                      "``" # group # "_" # op # "(" # !interleave(args, ", ")
                      # ")``: " # doc>;

// A reduction or scan: the doc says what combines over which lanes and
// what a thread's several values (a fragment or vector) do.
class Enigma_GroupCombine<string group, string op, string rule, string what>
    : Enigma_GroupFunction<group, op, ["x"], rule,
        what # " over the active lanes of the "
        # !if(!eq(group, "simd"), "simdgroup (32 lanes)", "quad (4 lanes)")
        # ". Same dtype as ``x``; int, uint or float"
        # !if(!eq(rule, "GroupBitwise"), " (integers only)", "") # ". "
        # !if(!eq(rule, "GroupScan"),
              "A fragment or vector ``x`` is scanned element by element.",
              "For a fragment or vector ``x``, the thread's own values are "
              # "combined first: the result is one scalar.")>;

multiclass Enigma_GroupOps<string group> {
  def SumOp : Enigma_SimdReduceOp<group # "_sum", Enigma_SimdArithType, "sum">,
              Enigma_GroupCombine<group, "sum", "GroupReduce", "the sum">;
  def ProductOp : Enigma_SimdReduceOp<group # "_product", Enigma_SimdArithType,
                                       "product">,
                  Enigma_GroupCombine<group, "product", "GroupReduce",
                                      "the product">;
  def MinOp : Enigma_SimdMinMaxOp<group # "_min", "minimum">,
              Enigma_GroupCombine<group, "min", "GroupMinMax",
                  "the minimum (signed or unsigned by dtype)">;
  def MaxOp : Enigma_SimdMinMaxOp<group # "_max", "maximum">,
              Enigma_GroupCombine<group, "max", "GroupMinMax",
                  "the maximum (signed or unsigned by dtype)">;
  def AndOp : Enigma_SimdReduceOp<group # "_and", Enigma_SimdBitsType,
                                   "bitwise and">,
              Enigma_GroupCombine<group, "and", "GroupBitwise", "bitwise and">;
  def OrOp : Enigma_SimdReduceOp<group # "_or", Enigma_SimdBitsType,
                                  "bitwise or">,
             Enigma_GroupCombine<group, "or", "GroupBitwise", "bitwise or">;
  def XorOp : Enigma_SimdReduceOp<group # "_xor", Enigma_SimdBitsType,
                                   "bitwise xor">,
              Enigma_GroupCombine<group, "xor", "GroupBitwise", "bitwise xor">;
  def PrefixExclusiveSumOp
      : Enigma_SimdReduceOp<group # "_prefix_exclusive_sum",
                            Enigma_SimdArithType, "exclusive prefix sum">,
        Enigma_GroupCombine<group, "prefix_exclusive_sum", "GroupScan",
            "each lane gets the sum of the lanes below it (0 for the first "
            # "lane)">;
  def PrefixInclusiveSumOp
      : Enigma_SimdReduceOp<group # "_prefix_inclusive_sum",
                            Enigma_SimdArithType, "inclusive prefix sum">,
        Enigma_GroupCombine<group, "prefix_inclusive_sum", "GroupScan",
            "each lane gets the sum of the lanes up to and including it">;
  def PrefixExclusiveProductOp
      : Enigma_SimdReduceOp<group # "_prefix_exclusive_product",
                            Enigma_SimdArithType, "exclusive prefix product">,
        Enigma_GroupCombine<group, "prefix_exclusive_product", "GroupScan",
            "each lane gets the product of the lanes below it (1 for the "
            # "first lane)">;
  def PrefixInclusiveProductOp
      : Enigma_SimdReduceOp<group # "_prefix_inclusive_product",
                            Enigma_SimdArithType, "inclusive prefix product">,
        Enigma_GroupCombine<group, "prefix_inclusive_product", "GroupScan",
            "each lane gets the product of the lanes up to and including it">;
  def ShuffleOp : Enigma_SimdShuffleOp<group # "_shuffle", "lane">,
                  Enigma_GroupFunction<group, "shuffle", ["value", "lane"],
                      "GroupShuffle", "the value of lane ``lane % width``; a "
                      # "lane that does not exist gives the caller's own "
                      # "value.">;
  def ShuffleUpOp : Enigma_SimdShuffleOp<group # "_shuffle_up", "delta">,
                    Enigma_GroupFunction<group, "shuffle_up",
                        ["value", "delta"], "GroupShuffle",
                        "the value of lane ``me - delta``; lanes below "
                        # "``delta`` keep their own value.">;
  def ShuffleDownOp : Enigma_SimdShuffleOp<group # "_shuffle_down", "delta">,
                      Enigma_GroupFunction<group, "shuffle_down",
                          ["value", "delta"], "GroupShuffle",
                          "the value of lane ``me + delta``; lanes whose "
                          # "source is past the last existing lane keep "
                          # "their own value.">;
  def ShuffleXorOp : Enigma_SimdShuffleOp<group # "_shuffle_xor", "mask">,
                     Enigma_GroupFunction<group, "shuffle_xor",
                         ["value", "mask"], "GroupShuffle",
                         "the value of lane ``me ^ (mask % width)``; a lane "
                         # "that does not exist gives the caller's own "
                         # "value.">;
  def BroadcastOp : Enigma_SimdShuffleOp<group # "_broadcast", "lane">,
                    Enigma_GroupFunction<group, "broadcast", ["value", "lane"],
                        "GroupShuffle", "the value of lane ``lane % width`` "
                        # "(an alias of shuffle meant for a uniform lane).">;
}

// Enigma_SimdSumOp -> C++ class SimdSumOp, mnemonic simd_sum; likewise
// QuadSumOp and so on.
defm Enigma_Simd : Enigma_GroupOps<"simd">;
defm Enigma_Quad : Enigma_GroupOps<"quad">;

//===----------------------------------------------------------------------===//
// Votes and lane queries of the simdgroup
//
// A ballot is Metal's simd_vote read as its vote_t, a ulong: bit k for lane
// k. Every lane of the simdgroup reaches these ops (the rule of all simd
// functions), so the lanes taking part are the lanes that exist.
//===----------------------------------------------------------------------===//

// x (bool) -> a bool or a ballot.
class Enigma_SimdVoteOp<string mnemonic, Type resultType, string rule,
                        string doc>
    : Enigma_SimdGroupOp<mnemonic>,
      Enigma_GroupFunction<"simd", !substr(mnemonic, 5), ["x"], rule, doc> {
  let summary = mnemonic # "(x)";
  let arguments = (ins I1:$value);
  let results = (outs resultType:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
}

// () -> a bool or a ballot of the lanes themselves.
class Enigma_SimdLaneQueryOp<string mnemonic, Type resultType, string doc>
    : Enigma_SimdGroupOp<mnemonic>,
      Enigma_GroupFunction<"simd", !substr(mnemonic, 5), [], "GroupLaneQuery",
                           doc> {
  let summary = mnemonic # "()";
  let results = (outs resultType:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Enigma_SimdAnyOp : Enigma_SimdVoteOp<"simd_any", I1, "GroupVote",
    "true in every lane when ``x`` is true in at least one lane of the "
    # "simdgroup (bool; a number is true when non-zero).">;
def Enigma_SimdAllOp : Enigma_SimdVoteOp<"simd_all", I1, "GroupVote",
    "true in every lane when ``x`` is true in every lane of the simdgroup "
    # "that exists (bool; a number is true when non-zero).">;
def Enigma_SimdBallotOp : Enigma_SimdVoteOp<"simd_ballot", I64, "GroupBallot",
    "a ``ulong`` with bit k set when ``x`` is true in lane k (Metal's "
    # "``simd_vote`` read as its ``vote_t``); lanes that do not exist give "
    # "0 bits.">;
def Enigma_SimdActiveThreadsMaskOp
    : Enigma_SimdLaneQueryOp<"simd_active_threads_mask", I64,
        "a ``ulong`` with bit k set for each lane k that exists (the "
        # "ballot of ``true``): ``0xffffffff`` in a full simdgroup.">;
def Enigma_SimdIsFirstOp : Enigma_SimdLaneQueryOp<"simd_is_first", I1,
    "true in the lowest lane taking part (lane 0, since every lane reaches "
    # "simdgroup functions), false in the others.">;

//===----------------------------------------------------------------------===//
// Simdgroup matrices (8x8, float or half)
//
// A matrix is held collectively by the 32 lanes of a simdgroup. In the IR it
// is a vector<2xT> per lane: lane l holds elements 2l and 2l+1 of the 8x8
// tile in row-major order (row l / 4, columns 2 * (l % 4) and the next one).
// MSL prints Metal's simdgroup_float8x8 / simdgroup_half8x8 and functions;
// CUDA and the CPU work on the per-lane pairs (docs/reference/simd.md).
//===----------------------------------------------------------------------===//

def Enigma_SimdgroupMatrixType : VectorOfLengthAndType<[2], [F32, F16]>;
def Enigma_SimdgroupMatrixMemRef : MemRefRankOf<[F32, F16], [1]>;

// Shared verifier (SimdOps.cpp): that of the simd functions, plus matching
// element types.
class Enigma_SimdgroupMatrixOp<string mnemonic, list<Trait> traits = []>
    : Enigma_Op<mnemonic, !listconcat(traits, [Enigma_Collective])> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::enigma::verifySimdgroupMatrixOp(getOperation());
    }
  }];
}

def Enigma_SimdgroupMatrixLoadOp
    : Enigma_SimdgroupMatrixOp<"simdgroup_matrix_load"> {
  let summary = "simdgroup_load(m, memref + offset, elements_per_row)";
  let description = [{
    Loads the 8x8 tile whose element (0, 0) is `memref[offset]` and whose
    rows are `elements_per_row` elements apart. `offset` and
    `elements_per_row` must be the same in every lane of the simdgroup.
    With `transpose`, the tile is the transpose of that one: element (r, c)
    is `memref[offset + c * elements_per_row + r]` (Metal's
    `transpose_matrix` argument).
  }];
  let arguments = (ins Arg<Enigma_SimdgroupMatrixMemRef, "", [MemRead]>:$memref,
                       I32:$offset, I32:$elements_per_row,
                       UnitAttr:$transpose);
  let results = (outs Enigma_SimdgroupMatrixType:$result);
  let assemblyFormat = [{
    $memref `[` $offset `]` `,` $elements_per_row attr-dict `:` type($memref)
    `->` type($result)
  }];
}

def Enigma_SimdgroupMatrixStoreOp
    : Enigma_SimdgroupMatrixOp<"simdgroup_matrix_store"> {
  let summary = "simdgroup_store(m, memref + offset, elements_per_row)";
  let description = [{
    Stores the 8x8 tile to `memref[offset + row * elements_per_row + col]`.
  }];
  let arguments = (ins Enigma_SimdgroupMatrixType:$value,
                       Arg<Enigma_SimdgroupMatrixMemRef, "", [MemWrite]>:$memref,
                       I32:$offset, I32:$elements_per_row);
  let assemblyFormat = [{
    $value `,` $memref `[` $offset `]` `,` $elements_per_row attr-dict `:`
    type($value) `,` type($memref)
  }];
}

def Enigma_SimdgroupMultiplyAccumulateOp
    : Enigma_SimdgroupMatrixOp<"simdgroup_multiply_accumulate", [
        NoMemoryEffect, AllTypesMatch<["a", "b", "c", "result"]>]> {
  let summary = "simdgroup_multiply_accumulate(d, a, b, c): d = a * b + c";
  let arguments = (ins Enigma_SimdgroupMatrixType:$a,
                       Enigma_SimdgroupMatrixType:$b,
                       Enigma_SimdgroupMatrixType:$c);
  let results = (outs Enigma_SimdgroupMatrixType:$result);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($result)";
}

def Enigma_MakeFilledSimdgroupMatrixOp
    : Enigma_SimdgroupMatrixOp<"make_filled_simdgroup_matrix", [
        NoMemoryEffect]> {
  let summary = "make_filled_simdgroup_matrix<T, 8, 8>(value)";
  let description = [{
    A tile with every element `value`, which must be the same in every lane
    of the simdgroup.
  }];
  let arguments = (ins AnyTypeOf<[F32, F16]>:$value);
  let results = (outs Enigma_SimdgroupMatrixType:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

#endif
