//===- Vectors.h - KernelBuilder calls of the vectors family -----*- C++ -*-===//
//
// Vector construction and lane access, and the original DSL's quantisation
// helpers (docs/reference/vectors.md gives their formulas).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_VECTORS_H
#define ENIGMA_BUILDER_VECTORS_H

#include "enigma/Builder/KernelBuilder.h"

#include <vector>

namespace enigma {

/// float4(a, b, c, d): 2 to 4 scalars of one dtype.
Value makeVec(KernelBuilder &k, const std::vector<Value> &components);
/// Lane `lane` of vector `v` (v.x is lane 0).
Value vecExtract(KernelBuilder &k, Value v, unsigned lane);

// Geometry (dot, length, ..., faceforward) and normalized-integer packing
// (pack_float_to_unorm4x8, unpack_unorm4x8_to_float, ...) are rows of the
// math family's table: callFunction(k, "dot", {a, b}) (Functions.h).

// --- Quantisation ---------------------------------------------------------------
/// 4-lane integer vector -> uint, lane 0 in bits 0-7 (lanes wrap to 8 bits).
Value packUint8x4(KernelBuilder &k, Value v);
/// uint -> uint4 of its bytes (lane i = (u >> 8i) & 0xff), the inverse of
/// packUint8x4.
Value unpackUint8x4(KernelBuilder &k, Value packed);
/// 2-lane integer vector -> uint: lane 0 in bits 0-3, lane 1 in bits 4-7,
/// each wrapped to 4 bits (two's complement).
Value packInt4x2(KernelBuilder &k, Value v);
/// integer -> int2 of the sign-extended nibbles of its low byte, low nibble
/// first.
Value unpackInt4x2(KernelBuilder &k, Value packed);
/// float(int(x) - int(zeroPoint)) * float(scale), a float (vector when x
/// is one); x may be integer or float (converted to int).
Value dequantizeInt8(KernelBuilder &k, Value x, Value scale, Value zeroPoint);

} // namespace enigma

#endif
