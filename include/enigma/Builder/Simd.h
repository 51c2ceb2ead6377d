//===- Simd.h - KernelBuilder calls of the simd family -----*- C++ -*-===//
//
// SIMD-group (32 lanes) and quad-group (4 lanes) functions with Metal's
// names and semantics (docs/reference/simd.md). Each takes a traced Value and
// returns a Value of the same dtype; the builder is the operand's.
//
//   enigma::Value s = enigma::simdSum(x);
//   enigma::Value n = enigma::simdShuffleDown(x, k.constantInt(1, DType::U32));
//
// Mistakes (a bool sum, a float xor, a non-integer lane) throw EnigmaError.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_SIMD_H
#define ENIGMA_BUILDER_SIMD_H

#include "enigma/Builder/KernelBuilder.h"

#include <string>

namespace enigma {

/// Which lanes combine: the 32 lanes of a simdgroup or the 4 of a quad.
enum class LaneGroup : uint8_t { Simd, Quad };

/// Reductions and scans over a lane group.
enum class GroupReduce : uint8_t {
  Sum, Product, Min, Max, And, Or, Xor,
  PrefixExclusiveSum, PrefixInclusiveSum,
  PrefixExclusiveProduct, PrefixInclusiveProduct,
};

/// Reads of another lane's value.
enum class GroupShuffle : uint8_t { Shuffle, ShuffleUp, ShuffleDown, ShuffleXor, Broadcast };

/// `<group>_<op>(v)`, e.g. simd_sum(v). min/max compare by v's dtype.
Value groupReduce(LaneGroup group, GroupReduce op, Value v);
/// `<group>_<op>(v, lane)`, e.g. simd_shuffle_down(v, delta). `lane` is any
/// integer Value (converted to uint).
Value groupShuffle(LaneGroup group, GroupShuffle op, Value v, Value lane);

/// The same by Metal name ("simd_sum", "quad_shuffle_xor", ...); throws
/// EnigmaError for an unknown name or a missing / extra lane operand.
Value simdGroupCall(const std::string &metalName, Value v, Value lane = {});

// Named shorthands.
#define ENIGMA_GROUP_REDUCE_FN(fn, group, op)                                  \
  inline Value fn(Value v) { return groupReduce(LaneGroup::group, GroupReduce::op, v); }
#define ENIGMA_GROUP_SHUFFLE_FN(fn, group, op)                                 \
  inline Value fn(Value v, Value lane) {                                       \
    return groupShuffle(LaneGroup::group, GroupShuffle::op, v, lane);          \
  }
ENIGMA_GROUP_REDUCE_FN(simdSum, Simd, Sum)
ENIGMA_GROUP_REDUCE_FN(simdProduct, Simd, Product)
ENIGMA_GROUP_REDUCE_FN(simdMin, Simd, Min)
ENIGMA_GROUP_REDUCE_FN(simdMax, Simd, Max)
ENIGMA_GROUP_REDUCE_FN(simdAnd, Simd, And)
ENIGMA_GROUP_REDUCE_FN(simdOr, Simd, Or)
ENIGMA_GROUP_REDUCE_FN(simdXor, Simd, Xor)
ENIGMA_GROUP_REDUCE_FN(simdPrefixExclusiveSum, Simd, PrefixExclusiveSum)
ENIGMA_GROUP_REDUCE_FN(simdPrefixInclusiveSum, Simd, PrefixInclusiveSum)
ENIGMA_GROUP_REDUCE_FN(simdPrefixExclusiveProduct, Simd, PrefixExclusiveProduct)
ENIGMA_GROUP_REDUCE_FN(simdPrefixInclusiveProduct, Simd, PrefixInclusiveProduct)
ENIGMA_GROUP_SHUFFLE_FN(simdShuffle, Simd, Shuffle)
ENIGMA_GROUP_SHUFFLE_FN(simdShuffleUp, Simd, ShuffleUp)
ENIGMA_GROUP_SHUFFLE_FN(simdShuffleDown, Simd, ShuffleDown)
ENIGMA_GROUP_SHUFFLE_FN(simdShuffleXor, Simd, ShuffleXor)
ENIGMA_GROUP_SHUFFLE_FN(simdBroadcast, Simd, Broadcast)
ENIGMA_GROUP_REDUCE_FN(quadSum, Quad, Sum)
ENIGMA_GROUP_REDUCE_FN(quadProduct, Quad, Product)
ENIGMA_GROUP_REDUCE_FN(quadMin, Quad, Min)
ENIGMA_GROUP_REDUCE_FN(quadMax, Quad, Max)
ENIGMA_GROUP_REDUCE_FN(quadAnd, Quad, And)
ENIGMA_GROUP_REDUCE_FN(quadOr, Quad, Or)
ENIGMA_GROUP_REDUCE_FN(quadXor, Quad, Xor)
ENIGMA_GROUP_REDUCE_FN(quadPrefixExclusiveSum, Quad, PrefixExclusiveSum)
ENIGMA_GROUP_REDUCE_FN(quadPrefixInclusiveSum, Quad, PrefixInclusiveSum)
ENIGMA_GROUP_REDUCE_FN(quadPrefixExclusiveProduct, Quad, PrefixExclusiveProduct)
ENIGMA_GROUP_REDUCE_FN(quadPrefixInclusiveProduct, Quad, PrefixInclusiveProduct)
ENIGMA_GROUP_SHUFFLE_FN(quadShuffle, Quad, Shuffle)
ENIGMA_GROUP_SHUFFLE_FN(quadShuffleUp, Quad, ShuffleUp)
ENIGMA_GROUP_SHUFFLE_FN(quadShuffleDown, Quad, ShuffleDown)
ENIGMA_GROUP_SHUFFLE_FN(quadShuffleXor, Quad, ShuffleXor)
ENIGMA_GROUP_SHUFFLE_FN(quadBroadcast, Quad, Broadcast)
#undef ENIGMA_GROUP_REDUCE_FN
#undef ENIGMA_GROUP_SHUFFLE_FN

} // namespace enigma

#endif
