//===- Simd.h - KernelBuilder calls of the simd family -----*- C++ -*-===//
//
// SIMD-group (32 lanes) and quad-group (4 lanes) functions with Metal's
// names and semantics (docs/reference/simd.md) are rows of the simd
// family's table, called by name (Functions.h):
//
//   enigma::Value s = enigma::callFunction(k, "simd_sum", {x});
//   enigma::Value n = enigma::callFunction(
//       k, "simd_shuffle_down", {x, k.constantInt(1, DType::U32)});
//
// Mistakes (a bool sum, a float xor, a non-integer lane) throw EnigmaError.
// Simdgroup matrices, declared here, are not table functions.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_SIMD_H
#define ENIGMA_BUILDER_SIMD_H

#include "enigma/Builder/Cooperation.h"
#include "enigma/Builder/Functions.h"
#include "enigma/Builder/KernelBuilder.h"

#include <string>

namespace enigma {

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
