//===- Vectors.h - KernelBuilder calls of the vectors family -----*- C++ -*-===//
//
// Vector construction and lane access, Metal's geometric functions, and the
// pack/unpack and quantisation helpers (API.md section 8). Geometry and
// packing are expanded into arith/math/vector ops, so every backend computes
// them with the same formulas; docs/reference/vectors.md gives them exactly.
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

// --- Geometry (float vectors of one dtype) ----------------------------------
Value dot(KernelBuilder &k, Value a, Value b);
Value length(KernelBuilder &k, Value v);
Value distance(KernelBuilder &k, Value a, Value b);
Value normalize(KernelBuilder &k, Value v);
/// 3-lane vectors only.
Value cross(KernelBuilder &k, Value a, Value b);
Value reflect(KernelBuilder &k, Value i, Value n);
/// `eta` is a float scalar; zero on total internal reflection.
Value refract(KernelBuilder &k, Value i, Value n, Value eta);
/// n if dot(nref, i) < 0, else -n.
Value faceforward(KernelBuilder &k, Value n, Value i, Value nref);

// --- Normalized-integer packing -------------------------------------------------
enum class PackFormat : uint8_t {
  Snorm4x8,
  Unorm4x8,
  Snorm2x16,
  Unorm2x16,
  Srgb4x8,   // pack_float_to_srgb_unorm4x8 / unpack_unorm4x8_srgb_to_float
             // (the unpack is Metal's function: enigma.unpack_unorm4x8_srgb)
  Unorm10a2,
};
/// Lanes the format packs (4 or 2).
unsigned packLanes(PackFormat format);
/// A float vector of packLanes(format) lanes -> uint.
Value packFloat(KernelBuilder &k, PackFormat format, Value v);
/// uint -> float vector of packLanes(format) lanes.
Value unpackToFloat(KernelBuilder &k, PackFormat format, Value packed);

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
