//===- DType.h - Element types shared by every layer ------------*- C++ -*-===//
//
// The element types of the Enigma language, independent of MLIR so that
// runtimes and the Python layer can use them without MLIR headers. The two
// 8-bit floats (OCP FP8 e4m3 and e5m2, docs/design/fp8.md) come last: they
// are floats for conversions but are stored as bytes and compute in f32.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_DTYPE_H
#define ENIGMA_SUPPORT_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace enigma {

enum class DType : uint8_t {
  F32, F16, BF16, I8, U8, I16, U16, I32, U32, I64, U64, Bool, F8E4M3, F8E5M2,
};

inline constexpr int kNumDTypes = 14;

/// Size in bytes of one element (bool is one byte, as in Metal buffers).
size_t byteWidth(DType t);
/// Short name: "f32", "u8", "b1", ...
const char *shortName(DType t);
/// Metal Shading Language spelling: "float", "uchar", "bool", ... (the 8-bit
/// floats are stored as "uchar": Metal has no 8-bit float type).
const char *mslName(DType t);
/// numpy dtype string: "float32", "uint8", "bool", ... (bf16 -> "bfloat16").
const char *numpyName(DType t);

bool isFloat(DType t);   // includes the 8-bit floats
bool isFloat8(DType t);  // F8E4M3 or F8E5M2
bool isInteger(DType t); // excludes bool
bool isSigned(DType t);  // true for floats and signed integers

/// Parses any accepted spelling: short names ("f32"), class names
/// ("Float32"), MSL names ("float", "uint", "half") and numpy names.
std::optional<DType> parseDType(std::string_view name);

} // namespace enigma

#endif
