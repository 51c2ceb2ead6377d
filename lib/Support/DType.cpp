//===- DType.cpp ----------------------------------------------------------===//
#include "enigma/Support/DType.h"

#include <array>

namespace enigma {
namespace {
struct DTypeInfo {
  DType type;
  size_t bytes;
  const char *shortName, *className, *msl, *numpy;
  bool isFloat, isSigned;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::F32, 4, "f32", "Float32", "float", "float32", true, true},
    {DType::F16, 2, "f16", "Float16", "half", "float16", true, true},
    {DType::BF16, 2, "bf16", "BFloat16", "bfloat", "bfloat16", true, true},
    {DType::I8, 1, "i8", "Int8", "char", "int8", false, true},
    {DType::U8, 1, "u8", "UInt8", "uchar", "uint8", false, false},
    {DType::I16, 2, "i16", "Int16", "short", "int16", false, true},
    {DType::U16, 2, "u16", "UInt16", "ushort", "uint16", false, false},
    {DType::I32, 4, "i32", "Int32", "int", "int32", false, true},
    {DType::U32, 4, "u32", "UInt32", "uint", "uint32", false, false},
    {DType::I64, 8, "i64", "Int64", "long", "int64", false, true},
    {DType::U64, 8, "u64", "UInt64", "ulong", "uint64", false, false},
    {DType::Bool, 1, "b1", "Bool", "bool", "bool", false, false},
    // Stored as uchar in every C-family target; the numpy names are
    // ml_dtypes' (also torch.float8_e4m3fn / float8_e5m2).
    {DType::F8E4M3, 1, "f8e4m3", "Float8E4M3", "uchar", "float8_e4m3fn", true,
     true},
    {DType::F8E5M2, 1, "f8e5m2", "Float8E5M2", "uchar", "float8_e5m2", true,
     true},
}};

const DTypeInfo &info(DType t) { return kInfo[static_cast<size_t>(t)]; }
} // namespace

size_t byteWidth(DType t) { return info(t).bytes; }
const char *shortName(DType t) { return info(t).shortName; }
const char *mslName(DType t) { return info(t).msl; }
const char *numpyName(DType t) { return info(t).numpy; }
bool isFloat(DType t) { return info(t).isFloat; }
bool isFloat8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }
bool isInteger(DType t) { return !info(t).isFloat && t != DType::Bool; }
bool isSigned(DType t) { return info(t).isSigned; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &i : kInfo)
    if (name == i.shortName || name == i.className || name == i.msl ||
        name == i.numpy)
      return i.type;
  // Common aliases users write.
  if (name == "int8_t") return DType::I8;
  if (name == "uint8_t") return DType::U8;
  if (name == "int16_t") return DType::I16;
  if (name == "uint16_t") return DType::U16;
  if (name == "int32_t") return DType::I32;
  if (name == "uint32_t" || name == "unsigned") return DType::U32;
  if (name == "int64_t") return DType::I64;
  if (name == "uint64_t") return DType::U64;
  if (name == "bfloat16_t") return DType::BF16;
  if (name == "float8_e4m3" || name == "e4m3") return DType::F8E4M3;
  if (name == "e5m2") return DType::F8E5M2;
  return std::nullopt;
}

} // namespace enigma
