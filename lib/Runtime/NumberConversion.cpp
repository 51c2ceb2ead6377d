//===- NumberConversion.cpp - Host numbers to kernel scalars --------------===//
//
// convertNumber (Dispatch.h): a number given for a scalar parameter or a
// function constant, checked against the parameter's type and turned into
// the bits the kernel reads.
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/Dispatch.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace enigma {

namespace {
std::string describeNumber(const HostNumber &value) {
  std::ostringstream out;
  if (const double *d = std::get_if<double>(&value)) {
    // The shortest text that reads back as the same double, laid out as
    // Python's repr does (1000000.0, 0.0001, 1e+39, 1e-05; never
    // 9.9999999999999994e+38).
    double magnitude = std::fabs(*d);
    bool fixed = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16);
    char text[400];
    auto [end, ec] = std::to_chars(
        text, text + sizeof text, *d,
        fixed ? std::chars_format::fixed : std::chars_format::scientific);
    std::string shortest(text, ec == std::errc() ? end : text);
    out << shortest;
    // Make it visible that the user passed a float, even for 3.0.
    if (std::isfinite(*d) &&
        shortest.find_first_of(".e") == std::string::npos)
      out << ".0";
  } else if (const int64_t *i = std::get_if<int64_t>(&value)) {
    out << *i;
  } else if (const uint64_t *u = std::get_if<uint64_t>(&value)) {
    out << *u;
  } else {
    out << (std::get<bool>(value) ? "True" : "False");
  }
  return out.str();
}

[[noreturn]] void rejectNumber(const HostNumber &value, std::string_view what,
                               const std::string &why) {
  throw DispatchError(std::string(what) + " cannot take " +
                      describeNumber(value) + ": " + why);
}

/// Rounds `value` to nearest-even in an IEEE binary format with the given
/// field widths; nothing if a finite value overflows it. Rounding directly
/// from double avoids the double rounding of going through float.
std::optional<uint64_t> roundToBinaryFormat(double value, int exponentBits,
                                            int fractionBits) {
  const uint64_t sign = std::signbit(value) ? 1ull << (exponentBits + fractionBits) : 0;
  const uint64_t exponentMask = ((1ull << exponentBits) - 1) << fractionBits;
  if (std::isnan(value))
    return sign | exponentMask | (1ull << (fractionBits - 1)); // quiet NaN
  if (std::isinf(value))
    return sign | exponentMask;
  double magnitude = std::fabs(value);
  if (magnitude == 0)
    return sign;
  const int bias = (1 << (exponentBits - 1)) - 1;
  const int minExponent = 1 - bias;
  int exponent = std::max(std::ilogb(magnitude), minExponent);
  // Scale so that the representable values are exactly the integers.
  auto mantissa = uint64_t(std::nearbyint(
      std::ldexp(magnitude, fractionBits - exponent)));
  if (mantissa >> (fractionBits + 1)) { // rounding carried into the next binade
    mantissa >>= 1;
    ++exponent;
  }
  if (exponent > bias)
    return std::nullopt;
  const uint64_t implicitBit = 1ull << fractionBits;
  if (mantissa < implicitBit) // subnormal (exponent field 0)
    return sign | mantissa;
  return sign | (uint64_t(exponent + bias) << fractionBits) |
         (mantissa - implicitBit);
}

/// Rounds `value` to nearest-even in f8e4m3 (docs/design/fp8.md): an IEEE
/// layout whose top exponent holds finite values, all but S.1111.111 (its
/// one NaN); nothing if a finite value rounds beyond 448. From double
/// directly, as roundToBinaryFormat.
std::optional<uint64_t> roundToFloat8E4M3(double value) {
  const uint64_t sign = std::signbit(value) ? 0x80u : 0u;
  if (std::isnan(value))
    return sign | 0x7fu;
  if (std::isinf(value))
    return std::nullopt;
  double magnitude = std::fabs(value);
  if (magnitude == 0)
    return sign;
  // 3 fraction bits: units of 2^(e - 3) in binade e, of 2^-9 below 2^-6.
  int exponent = std::max(std::ilogb(magnitude), -6);
  auto mantissa = uint64_t(std::nearbyint(std::ldexp(magnitude, 3 - exponent)));
  if (mantissa >> 4) {
    mantissa >>= 1;
    ++exponent;
  }
  if (exponent > 8 || (exponent == 8 && mantissa == 15))
    return std::nullopt; // beyond 448 (S.1111.111 is NaN)
  if (mantissa < 8) // subnormal
    return sign | mantissa;
  return sign | (uint64_t(exponent + 7) << 3) | (mantissa - 8);
}

ScalarValue toFloatBits(const HostNumber &value, DType dtype,
                        std::string_view what) {
  double number = 0;
  if (const double *d = std::get_if<double>(&value))
    number = *d;
  else if (const int64_t *i = std::get_if<int64_t>(&value))
    number = double(*i);
  else if (const uint64_t *u = std::get_if<uint64_t>(&value))
    number = double(*u);
  else
    number = std::get<bool>(value) ? 1.0 : 0.0;

  std::optional<uint64_t> bits;
  switch (dtype) {
  case DType::F32: {
    float single = float(number);
    if (!std::isinf(single) || std::isinf(number))
      bits = std::bit_cast<uint32_t>(single);
    break;
  }
  case DType::F16:
    bits = roundToBinaryFormat(number, 5, 10);
    break;
  case DType::F8E4M3:
    bits = roundToFloat8E4M3(number);
    break;
  case DType::F8E5M2: // IEEE-like: infinities, NaN with all exponent bits
    if (std::isnan(number))
      bits = (std::signbit(number) ? 0x80u : 0u) | 0x7fu; // metal_fp8.h's NaN
    else
      bits = roundToBinaryFormat(number, 5, 2);
    break;
  default: // BF16
    bits = roundToBinaryFormat(number, 8, 7);
    break;
  }
  if (!bits)
    rejectNumber(value, what, std::string("out of range for ") +
                                  shortName(dtype));
  return ScalarValue{dtype, *bits};
}

struct IntegerRange {
  int64_t min;
  uint64_t max;
};

IntegerRange integerRange(DType dtype) {
  unsigned bits = unsigned(byteWidth(dtype)) * 8;
  if (isSigned(dtype))
    return {bits == 64 ? std::numeric_limits<int64_t>::min()
                       : -(int64_t(1) << (bits - 1)),
            (uint64_t(1) << (bits - 1)) - 1};
  return {0, bits == 64 ? std::numeric_limits<uint64_t>::max()
                        : (uint64_t(1) << bits) - 1};
}

ScalarValue toIntegerBits(const HostNumber &value, DType dtype,
                          std::string_view what) {
  if (std::holds_alternative<double>(value))
    rejectNumber(value, what, std::string("a float is not an integer; ") +
                                  "convert it explicitly (int(x))");
  IntegerRange range = integerRange(dtype);
  uint64_t bits = 0;
  bool inRange = true;
  if (const int64_t *i = std::get_if<int64_t>(&value)) {
    inRange = *i >= range.min && (*i < 0 || uint64_t(*i) <= range.max);
    bits = uint64_t(*i);
  } else if (const uint64_t *u = std::get_if<uint64_t>(&value)) {
    inRange = *u <= range.max;
    bits = *u;
  } else {
    bits = std::get<bool>(value) ? 1 : 0;
  }
  if (!inRange) {
    std::ostringstream why;
    why << "out of range for " << shortName(dtype) << " [" << range.min
        << ", " << range.max << "]";
    rejectNumber(value, what, why.str());
  }
  unsigned width = unsigned(byteWidth(dtype)) * 8;
  if (width < 64)
    bits &= (uint64_t(1) << width) - 1; // keep only the dtype's bytes
  return ScalarValue{dtype, bits};
}

ScalarValue toBoolBits(const HostNumber &value, std::string_view what) {
  if (const bool *b = std::get_if<bool>(&value))
    return ScalarValue{DType::Bool, *b ? 1u : 0u};
  const int64_t *i = std::get_if<int64_t>(&value);
  const uint64_t *u = std::get_if<uint64_t>(&value);
  if ((i && (*i == 0 || *i == 1)) || (u && (*u == 0 || *u == 1)))
    return ScalarValue{DType::Bool, i ? uint64_t(*i) : *u};
  rejectNumber(value, what, "a bool takes True/False or 0/1");
}
} // namespace

ScalarValue convertNumber(const HostNumber &value, DType dtype,
                          std::string_view what) {
  if (dtype == DType::Bool)
    return toBoolBits(value, what);
  if (isFloat(dtype))
    return toFloatBits(value, dtype, what);
  return toIntegerBits(value, dtype, what);
}

} // namespace enigma
