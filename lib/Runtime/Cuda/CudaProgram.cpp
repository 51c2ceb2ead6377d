//===- CudaProgram.cpp ----------------------------------------------------===//
#include "CudaProgram.h"

#include "enigma/Target/Preludes.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

namespace enigma::cuda {
namespace {

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// binary16 -> float, exact for every value.
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) // inf / NaN
    return floatFromBits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) { // zero / subnormal: mantissa * 2^-24
    float magnitude = std::ldexp(float(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return floatFromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// A float literal that NVRTC reads back to the same bits: hexadecimal for
/// finite values, the bit pattern for infinities and NaNs.
std::string floatLiteral(float value) {
  char text[64];
  if (std::isfinite(value))
    std::snprintf(text, sizeof text, "%af", double(value));
  else {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    std::snprintf(text, sizeof text, "__int_as_float(0x%08x)", bits);
  }
  return text;
}

std::string signedLiteral(int64_t value) {
  if (value == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807LL - 1)";
  return std::to_string(value) + "LL";
}

/// Sign-extends the low `bytes` bytes of `bits`.
int64_t signExtend(uint64_t bits, size_t bytes) {
  unsigned shift = unsigned(64 - 8 * bytes);
  return int64_t(bits << shift) >> shift;
}

std::string literalFor(const ScalarValue &value) {
  size_t bytes = byteWidth(value.dtype);
  uint64_t low = bytes == 8 ? value.bits
                            : value.bits & ((uint64_t(1) << (8 * bytes)) - 1);
  switch (value.dtype) {
  case DType::F32:
    return floatLiteral(floatFromBits(uint32_t(low)));
  case DType::F16:
    return "__float2half(" + floatLiteral(halfToFloat(uint16_t(low))) + ")";
  case DType::BF16: // bfloat16 is the top half of a float
    return "__float2bfloat16(" +
           floatLiteral(floatFromBits(uint32_t(low) << 16)) + ")";
  case DType::Bool:
    return low ? "true" : "false";
  case DType::F8E4M3:
  case DType::F8E5M2: // stored as uchar: the bits
    return "(unsigned char)" + std::to_string(low) + "u";
  default:
    return isSigned(value.dtype) ? signedLiteral(signExtend(low, bytes))
                                 : std::to_string(low) + "ULL";
  }
}

/// Whole-word search, so that "half" in "halfway" does not count.
bool mentionsWord(const std::string &text, const char *word) {
  size_t length = std::strlen(word);
  auto isIdentChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t at = text.find(word); at != std::string::npos;
       at = text.find(word, at + 1)) {
    bool startsWord = at == 0 || !isIdentChar(text[at - 1]);
    bool endsWord =
        at + length == text.size() || !isIdentChar(text[at + length]);
    if (startsWord && endsWord)
      return true;
  }
  return false;
}

} // namespace

std::vector<std::string> functionConstantDefines(const ConstantValues &values) {
  std::vector<std::string> defines;
  for (const auto &[index, value] : values)
    defines.push_back("-DENIGMA_FC_" + std::to_string(index) + "=(" +
                      literalFor(value) + ")");
  return defines;
}

NvrtcProgramInput makeCudaProgram(const Nvrtc &nvrtc, const std::string &name,
                                  const std::string &source,
                                  const std::string &arch,
                                  const ConstantValues &constants) {
  NvrtcProgramInput program;
  program.name = name + ".cu";
  program.source = source;
  for (const PreludeFile &file : cudaPreludeFiles())
    program.headers.emplace_back(std::string(file.name),
                                 std::string(file.text));

  // --device-int128: the prelude's saturating and high-half integer math
  // computes 64-bit products exactly in 128 bits.
  program.options = {"--gpu-architecture=" + arch, "-std=c++17",
                     "-default-device", "--device-int128"};
  // cuda_fp16.h / cuda_bf16.h are large; parse them only for kernels that
  // use half or bfloat (they are the prelude's only system headers).
  bool wantsHalf = mentionsWord(source, "half") ||
                   mentionsWord(source, "__half");
  bool wantsBfloat = mentionsWord(source, "bfloat") ||
                     mentionsWord(source, "__nv_bfloat16");
  // A half function constant is spelled with __float2half, so it needs the
  // header too.
  for (const auto &entry : constants) {
    wantsHalf |= entry.second.dtype == DType::F16;
    wantsBfloat |= entry.second.dtype == DType::BF16;
  }
  if (wantsHalf || wantsBfloat) {
    if (nvrtc.cudaIncludeDir().empty())
      throw RuntimeFailure(
          "this kernel uses half or bfloat, which needs cuda_fp16.h and "
          "cuda_bf16.h from the CUDA toolkit, but they were not found next "
          "to NVRTC (" + nvrtc.libraryPath() +
          "), in $CUDA_HOME/include or /usr/local/cuda/include; set "
          "ENIGMA_CUDA_INCLUDE to the folder holding them");
    program.options.push_back("-I" + nvrtc.cudaIncludeDir());
    if (wantsHalf)
      program.options.push_back("-DENIGMA_USE_HALF=1");
    if (wantsBfloat)
      program.options.push_back("-DENIGMA_USE_BFLOAT=1");
  }
  for (std::string &define : functionConstantDefines(constants))
    program.options.push_back(std::move(define));
  for (std::string &option : userNvrtcOptions())
    program.options.push_back(std::move(option));
  return program;
}

std::vector<std::string> userNvrtcOptions() {
  std::vector<std::string> options;
  const char *text = std::getenv("ENIGMA_NVRTC_OPTIONS");
  std::istringstream words(text ? text : "");
  for (std::string word; words >> word;)
    options.push_back(word);
  return options;
}

} // namespace enigma::cuda
