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

#include "enigma/Builder/Cooperation.h"
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

// --- Simdgroup matrices (8x8) ---------------------------------------------
//
// A SimdgroupMatrix is an 8x8 tile of float or half held by the 32 lanes of a
// simdgroup: each lane's Value is a 2-lane vector with elements 2l and 2l+1
// of the tile in row-major order (lane l: row l / 4, columns 2 * (l % 4)
// and the next). Every lane of the simdgroup must reach these calls.
//
//   auto a = enigma::simdgroupMatrixLoad(k, A, k.constantInt(8, DType::U32));
//   auto c = enigma::makeFilledSimdgroupMatrix(k.constant(0.0, DType::F32), DType::F32);
//   enigma::simdgroupMatrixStore(enigma::simdgroupMultiplyAccumulate(a, a, c),
//                                O, k.constantInt(8, DType::U32));

/// One lane's share of a simdgroup matrix.
struct SimdgroupMatrix {
  Value value;      // vector of 2 elements per lane
  DType elem = DType::F32;
};

/// The memory a matrix loads from / stores to: a buffer parameter or a
/// threadgroup array whose dtype is the matrix's element type.
class SimdgroupMatrixMemory {
public:
  SimdgroupMatrixMemory(const Buffer &b) : buffer(&b) {}
  SimdgroupMatrixMemory(const ThreadgroupArray &a) : array(&a) {}
  const Buffer *buffer = nullptr;
  const ThreadgroupArray *array = nullptr;
};

/// Throws EnigmaError unless elem is float or half and rows = cols = 8.
void checkSimdgroupMatrixShape(DType elem, int rows, int cols);

/// simdgroup_load: the tile whose element (0, 0) is mem[offset] (offset
/// defaults to 0), rows `elementsPerRow` apart. Integer Values are converted
/// to uint. With `transpose`, the transpose of that tile: element (r, c) is
/// mem[offset + c * elementsPerRow + r].
SimdgroupMatrix simdgroupMatrixLoad(KernelBuilder &k, SimdgroupMatrixMemory mem,
                                    Value elementsPerRow, Value offset = {},
                                    DType elem = DType::F32, int rows = 8,
                                    int cols = 8, bool transpose = false);
/// simdgroup_store of `m` to the same places.
void simdgroupMatrixStore(const SimdgroupMatrix &m, SimdgroupMatrixMemory mem,
                          Value elementsPerRow, Value offset = {});
/// simdgroup_multiply_accumulate: a * b + c (all of one element type).
SimdgroupMatrix simdgroupMultiplyAccumulate(const SimdgroupMatrix &a,
                                            const SimdgroupMatrix &b,
                                            const SimdgroupMatrix &c);
/// make_filled_simdgroup_matrix<elem, 8, 8>(value): value converted to elem.
SimdgroupMatrix makeFilledSimdgroupMatrix(Value value, DType elem = DType::F32,
                                          int rows = 8, int cols = 8);

} // namespace enigma

#endif
