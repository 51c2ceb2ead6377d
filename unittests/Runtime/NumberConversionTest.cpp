//===- NumberConversionTest.cpp - Scalars converted to parameter dtypes ---===//
#include "enigma/Runtime/Dispatch.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

using namespace enigma;

namespace {
uint64_t bitsOf(HostNumber value, DType dtype) {
  return convertNumber(value, dtype, "scalar parameter x").bits;
}

/// The DispatchError message for a rejected conversion ("" if accepted).
std::string rejection(HostNumber value, DType dtype) {
  try {
    convertNumber(value, dtype, "scalar parameter n (" +
                                    std::string(shortName(dtype)) + ")");
  } catch (const DispatchError &error) {
    return error.what();
  }
  return "";
}
} // namespace

TEST(NumberConversionTest, IntegersInRange) {
  EXPECT_EQ(bitsOf(int64_t(255), DType::U8), 255u);
  EXPECT_EQ(bitsOf(int64_t(-128), DType::I8), 0x80u);
  EXPECT_EQ(bitsOf(int64_t(-1), DType::I32), 0xffffffffu);
  EXPECT_EQ(bitsOf(int64_t(-1), DType::I64), ~uint64_t(0));
  EXPECT_EQ(bitsOf(std::numeric_limits<uint64_t>::max(), DType::U64),
            ~uint64_t(0));
  EXPECT_EQ(bitsOf(int64_t(65535), DType::U16), 65535u);
  EXPECT_EQ(bitsOf(true, DType::I32), 1u); // a Python bool is an int
}

TEST(NumberConversionTest, IntegersOutOfRangeNameTheParameter) {
  std::string message = rejection(int64_t(-1), DType::U32);
  EXPECT_NE(message.find("scalar parameter n (u32)"), std::string::npos);
  EXPECT_NE(message.find("-1"), std::string::npos);
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;

  EXPECT_NE(rejection(int64_t(300), DType::U8), "");
  EXPECT_NE(rejection(int64_t(-129), DType::I8), "");
  EXPECT_NE(rejection(int64_t(32768), DType::I16), "");
  EXPECT_NE(rejection(int64_t(1) << 32, DType::U32), "");
  EXPECT_NE(rejection(std::numeric_limits<uint64_t>::max(), DType::I64), "");
  EXPECT_NE(rejection(int64_t(-1), DType::U64), "");
}

TEST(NumberConversionTest, FloatsAreNotIntegers) {
  std::string message = rejection(1.5, DType::I32);
  EXPECT_NE(message.find("1.5"), std::string::npos) << message;
  EXPECT_NE(rejection(3.0, DType::I32).find("3.0"), std::string::npos);
  EXPECT_NE(rejection(2.0, DType::U8), "");
}

TEST(NumberConversionTest, Bools) {
  EXPECT_EQ(bitsOf(true, DType::Bool), 1u);
  EXPECT_EQ(bitsOf(false, DType::Bool), 0u);
  EXPECT_EQ(bitsOf(int64_t(1), DType::Bool), 1u);
  EXPECT_NE(rejection(int64_t(2), DType::Bool), "");
  EXPECT_NE(rejection(1.0, DType::Bool), "");
}

TEST(NumberConversionTest, Float32) {
  EXPECT_EQ(bitsOf(1.5, DType::F32), 0x3fc00000u);
  EXPECT_EQ(bitsOf(int64_t(3), DType::F32), 0x40400000u);
  EXPECT_EQ(bitsOf(-0.0, DType::F32), 0x80000000u);
  EXPECT_EQ(bitsOf(std::numeric_limits<double>::infinity(), DType::F32),
            0x7f800000u);
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(uint32_t(
      bitsOf(std::numeric_limits<double>::quiet_NaN(), DType::F32)))));
  EXPECT_NE(rejection(1e39, DType::F32).find("out of range for f32"),
            std::string::npos);
}

TEST(NumberConversionTest, Float16RoundsToNearestEven) {
  EXPECT_EQ(bitsOf(1.0, DType::F16), 0x3c00u);
  EXPECT_EQ(bitsOf(-2.0, DType::F16), 0xc000u);
  EXPECT_EQ(bitsOf(65504.0, DType::F16), 0x7bffu);
  EXPECT_EQ(bitsOf(1.0 / 3.0, DType::F16), 0x3555u);
  EXPECT_EQ(bitsOf(std::ldexp(1.0, -24), DType::F16), 0x0001u); // subnormal
  EXPECT_EQ(bitsOf(std::ldexp(1.0, -26), DType::F16), 0x0000u); // underflow
  EXPECT_EQ(bitsOf(1.0 + std::ldexp(1.0, -11), DType::F16), 0x3c00u); // tie
  // Just above the tie: rounding through float first would lose this.
  EXPECT_EQ(bitsOf(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
                   DType::F16),
            0x3c01u);
  EXPECT_EQ(bitsOf(std::numeric_limits<double>::infinity(), DType::F16),
            0x7c00u);
  EXPECT_NE(rejection(65520.0, DType::F16), ""); // rounds past the maximum
  EXPECT_EQ(rejection(65519.0, DType::F16), "");
}

TEST(NumberConversionTest, BFloat16) {
  EXPECT_EQ(bitsOf(1.0, DType::BF16), 0x3f80u);
  EXPECT_EQ(bitsOf(1.0 + std::ldexp(1.0, -8), DType::BF16), 0x3f80u);
  EXPECT_EQ(bitsOf(1.0 + 3 * std::ldexp(1.0, -8), DType::BF16), 0x3f82u);
  EXPECT_EQ(bitsOf(-3.0, DType::BF16), 0xc040u);
  EXPECT_EQ(rejection(3.0e38, DType::BF16), "");
  EXPECT_NE(rejection(1e39, DType::BF16), "");
}
