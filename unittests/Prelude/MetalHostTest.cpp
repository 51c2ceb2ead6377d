//===- MetalHostTest.cpp - The Metal semantics library on the host --------===//
//
// Each expectation is derived by hand from Metal's definition (see the
// comment beside it), or computed by an independent reference written here
// (bit-by-bit loops; the integer functions against wide references are in
// MetalIntegerReferenceTest.cpp), never by running the code under test.
// The same files are built with the project's compiler and, as
// MetalHostTestClang, with clang++.
//
//===----------------------------------------------------------------------===//

#include "metal_semantics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

// MetalEveryFunctionHost.cpp: every function of the library, once.
void metal_every_function_on_host(float *F, metal::half *H, metal::bfloat *BF,
                                  char *I8, metal::uchar *U8, short *I16,
                                  metal::ushort *U16, int *I32, metal::uint *U32,
                                  long *I64, metal::ulong *U64, int i);

namespace {

using metal::bfloat;
using metal::half;

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

//===--- half -------------------------------------------------------------===//

TEST(MetalHalf, RoundsToNearestEven) {
  // ulp(1) in half is 2^-10; 2^-11 is exactly half an ulp: tie -> even (1.0).
  EXPECT_EQ(half(1.0f + 0x1p-11f).bits, 0x3c00);
  // 1 + 3*2^-11 = 1 + 1.5 ulp: tie between 1+ulp (odd) and 1+2ulp (even).
  EXPECT_EQ(half(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
  // Just above the tie rounds up.
  EXPECT_EQ(half(1.0f + 0x1p-11f + 0x1p-20f).bits, 0x3c01);
  EXPECT_EQ(half(-2.0f).bits, 0xc000);
  EXPECT_EQ(half(-0.0f).bits, 0x8000);
}

TEST(MetalHalf, OverflowAndSpecials) {
  EXPECT_EQ(half(65504.0f).bits, 0x7bff);  // largest finite
  EXPECT_EQ(half(65519.0f).bits, 0x7bff);  // below the tie
  EXPECT_EQ(half(65520.0f).bits, 0x7c00);  // tie with 2^16 -> even -> inf
  EXPECT_EQ(half(-1e10f).bits, 0xfc00);
  EXPECT_EQ(half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(metal::isnan(half(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lies only in bits half drops must stay NaN.
  EXPECT_TRUE(metal::isnan(half(metal::as_type<float>(0x7f800001u))));
}

TEST(MetalHalf, Subnormals) {
  EXPECT_EQ(half(0x1p-24f).bits, 0x0001);       // smallest subnormal
  EXPECT_EQ(half(0x1p-25f).bits, 0x0000);       // tie with 0 -> even (0)
  EXPECT_EQ(half(0x1.8p-25f).bits, 0x0001);     // 0.75 unit -> 1
  EXPECT_EQ(half(3 * 0x1p-25f).bits, 0x0002);   // 1.5 units, tie -> 2
  EXPECT_EQ(half(5 * 0x1p-25f).bits, 0x0002);   // 2.5 units, tie -> 2
  EXPECT_EQ(half(0x1.ffcp-15f).bits, 0x0400);   // 1023.5 units -> normal
  EXPECT_EQ(half(-0x1p-24f).bits, 0x8001);
  EXPECT_EQ(float(half::from_bits(0x0001)), 0x1p-24f);
  EXPECT_EQ(float(half::from_bits(0x03ff)), 1023 * 0x1p-24f);
  EXPECT_EQ(float(half::from_bits(0x0400)), 0x1p-14f);
}

TEST(MetalHalf, SoftConversionMatchesEveryHalf) {
  // Every half widens to a float that narrows back to the same bits.
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float wide = metal::detail::half_bits_to_float_soft(uint16_t(bits));
    if (metal::isnan(wide))
      continue;
    EXPECT_EQ(metal::detail::float_to_half_bits_soft(wide), bits);
  }
}

#if defined(__FLT16_MAX__)
TEST(MetalHalf, SoftConversionMatchesCompiler) {
  // The software path (used where _Float16 is missing) agrees with the
  // compiler's conversion over a dense sweep of float bit patterns.
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4093) {
    const float value = metal::detail::float_from_bits(uint32_t(bits));
    const _Float16 reference = static_cast<_Float16>(value);
    uint16_t expected;
    std::memcpy(&expected, &reference, sizeof expected);
    const uint16_t got = metal::detail::float_to_half_bits_soft(value);
    if (metal::isnan(value))
      EXPECT_TRUE((got & 0x7fff) > 0x7c00);
    else
      ASSERT_EQ(got, expected) << "float bits " << std::hex << bits;
  }
}
#endif

TEST(MetalHalf, ArithmeticRoundsEachOperation) {
  const half one(1.0f), tiny(0x1p-11f);
  EXPECT_EQ((one + tiny).bits, 0x3c00); // 1 + half-ulp -> 1
  half acc = one;
  acc += tiny;
  acc += tiny;
  EXPECT_EQ(acc.bits, 0x3c00); // each += rounds back to 1
  EXPECT_EQ(float(half(3.0f) / half(2.0f)), 1.5f);
  EXPECT_EQ((half(0.1f) * half(3)).bits, half(float(half(0.1f)) * 3.0f).bits);
  EXPECT_EQ((-half(2.0f)).bits, 0xc000);
  static_assert(std::is_same<decltype(half() + half()), half>::value, "");
  static_assert(std::is_same<decltype(half() * 2), half>::value, "");
  static_assert(std::is_same<decltype(half() * 2.0f), float>::value, "");
  static_assert(std::is_same<decltype(2.0f - half()), float>::value, "");
  EXPECT_TRUE(half(1.0f) < half(2.0f));
  EXPECT_TRUE(half(1.0f) == 1);
}

//===--- bfloat -----------------------------------------------------------===//

TEST(MetalBfloat, RoundsToNearestEvenAndKeepsNaN) {
  // bfloat keeps 7 fraction bits: ulp(1) = 2^-7.
  EXPECT_EQ(bfloat(1.0f).bits, 0x3f80);
  EXPECT_EQ(bfloat(1.0f + 0x1p-8f).bits, 0x3f80);      // tie -> even
  EXPECT_EQ(bfloat(1.0f + 3 * 0x1p-8f).bits, 0x3f82);  // tie -> even (up)
  EXPECT_EQ(bfloat(1.0f + 0x1p-8f + 0x1p-20f).bits, 0x3f81);
  EXPECT_EQ(bfloat(std::numeric_limits<float>::max()).bits, 0x7f80); // inf
  EXPECT_EQ(bfloat(-0.0f).bits, 0x8000);
  // Payload only in dropped bits: a plain rounding would give inf.
  const bfloat nan = bfloat(metal::as_type<float>(0x7f800001u));
  EXPECT_TRUE(metal::isnan(nan));
  EXPECT_TRUE(metal::isnan(bfloat(-std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(float(bfloat::from_bits(0x4049)), 3.140625f);
}

TEST(MetalBfloat, ArithmeticInFloatThenRounded) {
  const bfloat a(1.0f), b(0x1p-8f);
  EXPECT_EQ((a + b).bits, 0x3f80);
  EXPECT_EQ(float(bfloat(3.0f) * bfloat(5.0f)), 15.0f);
  // 8 significant bits: 255 is exact; 257 and 259 are ties -> even.
  EXPECT_EQ(float(bfloat(255)), 255.0f);
  EXPECT_EQ(float(bfloat(257)), 256.0f);
  EXPECT_EQ(float(bfloat(259)), 260.0f);
  static_assert(std::is_same<decltype(bfloat() + bfloat()), bfloat>::value, "");
  EXPECT_EQ(float(half(bfloat(1.5f))), 1.5f);
}

//===--- float math -------------------------------------------------------===//

TEST(MetalMath, RoundingFunctions) {
  EXPECT_EQ(metal::round(-2.5f), -3.0f); // half away from zero
  EXPECT_EQ(metal::round(2.5f), 3.0f);
  EXPECT_EQ(metal::round(0.49999997f), 0.0f);
  EXPECT_EQ(metal::rint(2.5f), 2.0f);    // half to even
  EXPECT_EQ(metal::rint(-3.5f), -4.0f);
  EXPECT_EQ(metal::trunc(-1.7f), -1.0f);
  EXPECT_EQ(float(metal::round(half(-2.5f))), -3.0f);
  EXPECT_EQ(metal::ceil(-0.5f), 0.0f);
  EXPECT_TRUE(metal::signbit(metal::ceil(-0.5f))); // -0.0
}

TEST(MetalMath, FractAndSign) {
  EXPECT_EQ(metal::fract(-0.25f), 0.75f);
  EXPECT_EQ(metal::fract(2.75f), 0.75f);
  // -2^-30 - floor = 1 - 2^-30, which rounds to 1.0f: clamped below 1.
  EXPECT_EQ(metal::fract(-0x1p-30f), 0x1.fffffep-1f);
  EXPECT_EQ(float(metal::fract(half(-0x1p-20f))), 0x1.ffcp-1f);
  const float minus_zero = metal::sign(-0.0f);
  EXPECT_EQ(minus_zero, 0.0f);
  EXPECT_TRUE(metal::signbit(minus_zero));
  EXPECT_FALSE(metal::signbit(metal::sign(0.0f)));
  EXPECT_EQ(metal::sign(-3.0f), -1.0f);
  EXPECT_EQ(metal::sign(std::numeric_limits<float>::quiet_NaN()), 0.0f);
}

TEST(MetalMath, ClampMixStepSmoothstep) {
  EXPECT_EQ(metal::smoothstep(0.0f, 1.0f, -1.0f), 0.0f);
  EXPECT_EQ(metal::smoothstep(0.0f, 1.0f, 0.0f), 0.0f);
  EXPECT_EQ(metal::smoothstep(0.0f, 1.0f, 0.5f), 0.5f);
  EXPECT_EQ(metal::smoothstep(0.0f, 1.0f, 1.0f), 1.0f);
  EXPECT_EQ(metal::smoothstep(0.0f, 1.0f, 2.0f), 1.0f);
  EXPECT_EQ(metal::smoothstep(2.0f, 4.0f, 3.0f), 0.5f);
  EXPECT_EQ(metal::step(0.5f, 0.5f), 1.0f); // x >= edge
  EXPECT_EQ(metal::step(0.5f, 0.25f), 0.0f);
  EXPECT_EQ(metal::mix(2.0f, 6.0f, 0.25f), 3.0f);
  EXPECT_EQ(metal::clamp(5.0f, 0.0f, 1.0f), 1.0f);
  EXPECT_EQ(metal::saturate(-2.0f), 0.0f);
  EXPECT_EQ(metal::saturate(std::numeric_limits<float>::quiet_NaN()), 0.0f);
  EXPECT_EQ(metal::fmin(1.0f, std::numeric_limits<float>::quiet_NaN()), 1.0f);
  EXPECT_EQ(metal::exp10(2.0f), 100.0f);
  EXPECT_EQ(metal::rsqrt(4.0f), 0.5f);
  EXPECT_EQ(metal::precise::sqrt(9.0f), 3.0f);
  EXPECT_EQ(metal::fast::exp2(3.0f), 8.0f);
}

TEST(MetalMath, Predicates) {
  EXPECT_TRUE(metal::isnormal(1e-6f));
  EXPECT_FALSE(metal::isnormal(half(1e-6f))); // subnormal as a half
  EXPECT_TRUE(metal::isnormal(half(1.0f)));
  EXPECT_FALSE(metal::isnormal(0.0f));
  EXPECT_TRUE(metal::isinf(half(1e5f)));
  EXPECT_FALSE(metal::isfinite(std::numeric_limits<float>::infinity()));
  EXPECT_TRUE(metal::signbit(half(-0.0f)));
}

//===--- integer functions --------------------------------------------------===//

template <class T> class MetalSaturating : public ::testing::Test {};
using IntegerTypes = ::testing::Types<signed char, metal::uchar, short,
                                      metal::ushort, int, metal::uint, long,
                                      metal::ulong>;
TYPED_TEST_SUITE(MetalSaturating, IntegerTypes);

TYPED_TEST(MetalSaturating, AddSubAtTheLimits) {
  using T = TypeParam;
  const T lo = std::numeric_limits<T>::min();
  const T hi = std::numeric_limits<T>::max();
  EXPECT_EQ(metal::addsat(hi, T(1)), hi);
  EXPECT_EQ(metal::addsat(hi, hi), hi);
  EXPECT_EQ(metal::addsat(T(1), T(2)), T(3));
  EXPECT_EQ(metal::subsat(lo, T(1)), lo);
  EXPECT_EQ(metal::subsat(T(3), T(2)), T(1));
  if (std::is_signed<T>::value) {
    EXPECT_EQ(metal::addsat(lo, T(-1)), lo);
    EXPECT_EQ(metal::addsat(lo, lo), lo);
    EXPECT_EQ(metal::subsat(hi, T(-1)), hi);
    EXPECT_EQ(metal::subsat(lo, hi), lo);
    EXPECT_EQ(metal::subsat(T(-1), lo), hi); // -1 - min = max exactly
  } else {
    EXPECT_EQ(metal::subsat(T(0), hi), T(0));
  }
  EXPECT_EQ(metal::clz(T(0)), T(sizeof(T) * 8));
  EXPECT_EQ(metal::ctz(T(0)), T(sizeof(T) * 8));
  EXPECT_EQ(metal::clz(T(1)), T(sizeof(T) * 8 - 1));
  EXPECT_EQ(metal::popcount(T(-1)), T(sizeof(T) * 8));
  EXPECT_EQ(metal::madsat(hi, T(2), T(0)), hi);
}

TEST(MetalInteger, Mulhi) {
  // 0xffffffff^2 = 0xfffffffe_00000001.
  EXPECT_EQ(metal::mulhi(0xffffffffu, 0xffffffffu), 0xfffffffeu);
  EXPECT_EQ(metal::mulhi(-1, 1), -1);                 // -1 = all ones high
  EXPECT_EQ(metal::mulhi(INT32_MIN, INT32_MIN), 0x40000000); // 2^62
  EXPECT_EQ(metal::mulhi(3, 5), 0);
  EXPECT_EQ(metal::mulhi(~0ul, ~0ul), ~0ul - 1);        // (2^64-1)^2
  EXPECT_EQ(metal::mulhi(-1l, -1l), 0l);
  EXPECT_EQ(metal::mulhi(INT64_MIN, INT64_MIN), 1l << 62); // 2^126
  EXPECT_EQ(metal::mulhi(-2l, 3l), -1l);
  EXPECT_EQ(metal::mulhi(metal::ushort(0xffff), metal::ushort(0xffff)), 0xfffe);
  EXPECT_EQ(metal::mulhi((signed char)-128, (signed char)-128), 64); // 16384
  EXPECT_EQ(metal::madhi(0xffffffffu, 0xffffffffu, 2u), 0u); // wraps
}

TEST(MetalInteger, AbsAndAbsdiff) {
  EXPECT_EQ(metal::abs(-5), 5);
  EXPECT_EQ(metal::abs(INT32_MIN), INT32_MIN); // wraps, as on the GPU
  EXPECT_EQ(metal::absdiff(INT32_MAX, -1), INT32_MIN); // 2^31 as bits
  EXPECT_EQ(metal::absdiff(3u, 10u), 7u);
  EXPECT_EQ(metal::absdiff((char)-3, (char)4), (char)7);
  EXPECT_EQ(metal::min((char)-1, (char)1), (char)-1); // char is signed
}

TEST(MetalInteger, Rotate) {
  EXPECT_EQ(metal::rotate(0x80000001u, 1u), 0x00000003u);
  EXPECT_EQ(metal::rotate(0x12345678u, 32u), 0x12345678u);
  EXPECT_EQ(metal::rotate(0x12345678u, 36u), 0x23456781u); // 36 mod 32
  EXPECT_EQ(metal::rotate(metal::uchar(0x81), metal::uchar(1)), 0x03);
  EXPECT_EQ(metal::rotate(1, -1), INT32_MIN); // left by 31
  EXPECT_EQ(metal::rotate(1ul, 63ul), 1ul << 63);
}

TEST(MetalInteger, BitReversal) {
  EXPECT_EQ(metal::reverse_bits(1u), 0x80000000u);
  EXPECT_EQ(metal::reverse_bits(metal::uchar(0x01)), 0x80);
  EXPECT_EQ(metal::reverse_bits(metal::ushort(0x00f1)), 0x8f00);
  EXPECT_EQ(metal::reverse_bits(1ul), 1ul << 63);
}

TEST(MetalInteger, ExtractBits) {
  EXPECT_EQ(metal::extract_bits(0xf0u, 4, 4), 0xfu);
  EXPECT_EQ(metal::extract_bits(0xf0u, 4, 0), 0u);            // bits = 0
  EXPECT_EQ(metal::extract_bits(0x12345678u, 0, 32), 0x12345678u);
  EXPECT_EQ(metal::extract_bits(0xf0, 4, 4), -1);             // sign-extended
  EXPECT_EQ(metal::extract_bits(0x70, 4, 4), 7);
  EXPECT_EQ(metal::extract_bits(-5, 0, 32), -5);              // full width
  EXPECT_EQ(metal::extract_bits(-1l, 60, 4), -1l);
  EXPECT_EQ(metal::extract_bits(~0ul, 60, 4), 0xful);
  EXPECT_EQ(metal::extract_bits((signed char)0x40, 4, 3), -4); // 0b100
  EXPECT_EQ(metal::extract_bits((char)0x40, 4, 3), (char)-4);
}

TEST(MetalInteger, InsertBits) {
  EXPECT_EQ(metal::insert_bits(0xffffffffu, 0u, 8, 8), 0xffff00ffu);
  EXPECT_EQ(metal::insert_bits(0x1234u, 0xffu, 4, 0), 0x1234u); // bits = 0
  EXPECT_EQ(metal::insert_bits(1u, 0xabcdu, 0, 32), 0xabcdu);   // full width
  EXPECT_EQ(metal::insert_bits(0, -1, 4, 4), 0xf0);
  EXPECT_EQ(metal::insert_bits(0u, 0x1ffu, 0, 4), 0xfu); // extra bits dropped
  EXPECT_EQ(metal::insert_bits(0ul, 1ul, 63, 1), 1ul << 63);
}

//===--- vectors ------------------------------------------------------------===//

TEST(MetalVector, LayoutAndConstruction) {
  static_assert(sizeof(metal::float3) == 16, "float3 is padded like float4");
  static_assert(alignof(metal::float4) == 16, "");
  static_assert(sizeof(metal::half3) == 8 && sizeof(metal::bool2) == 2, "");
  static_assert(sizeof(metal::long3) == 32, "");
  const metal::float4 v(metal::float2(1, 2), 3, 4);
  EXPECT_EQ(v.x, 1.0f);
  EXPECT_EQ(v.y, 2.0f);
  EXPECT_EQ(v.z, 3.0f);
  EXPECT_EQ(v.w, 4.0f);
  EXPECT_EQ(v.b, 3.0f);
  EXPECT_EQ(v[3], 4.0f);
  const metal::float4 w(metal::float3(5.0f), 6);
  EXPECT_EQ(w.x, 5.0f);
  EXPECT_EQ(w.w, 6.0f);
  const metal::uint3 broadcast = 7u;
  EXPECT_EQ(broadcast.z, 7u);
  metal::float2 m;
  m.x = 1.5f;
  m.g = 2.5f;
  EXPECT_EQ(m[0], 1.5f);
  EXPECT_EQ(m.y, 2.5f);
}

TEST(MetalVector, ElementWiseOperators) {
  metal::float4 a(1, 2, 3, 4);
  const metal::float4 b = 2.0f * a + 1;
  EXPECT_EQ(b.w, 9.0f);
  a += b;
  EXPECT_EQ(a.y, 7.0f);
  a /= 2;
  EXPECT_EQ(a.x, 2.0f);
  const metal::float2 negated = -metal::float2(0.0f, 1.0f);
  EXPECT_TRUE(metal::signbit(negated.x));
  // Integer vectors keep their element type and wrap.
  const metal::uchar4 u = metal::uchar4(200) + metal::uchar4(100);
  EXPECT_EQ(u.x, 44);
  const metal::int2 big = metal::int2(INT32_MAX) + 1;
  EXPECT_EQ(big.y, INT32_MIN);
  EXPECT_EQ((metal::int4(1) << 33).x, 2); // count taken modulo 32
  EXPECT_EQ((metal::int2(-8) >> 1).x, -4);
  EXPECT_EQ((metal::uint2(7) % 4u).y, 3u);
  EXPECT_EQ((~metal::uchar2(0)).x, 255);
  EXPECT_EQ((metal::int2(6, 5) & 3).y, 1);
  const metal::bool4 cmp = metal::float4(1, 2, 3, 4) > 2.0f;
  EXPECT_FALSE(cmp.x);
  EXPECT_TRUE(cmp.z);
  EXPECT_TRUE(metal::any(cmp));
  EXPECT_FALSE(metal::all(cmp));
  EXPECT_TRUE((!cmp).x);
  // half lanes round per operation.
  const metal::half2 h = metal::half2(1.0f) + metal::half2(0x1p-11f);
  EXPECT_EQ(h.x.bits, 0x3c00);
}

TEST(MetalVector, Conversions) {
  const metal::int4 i(metal::float4(1.7f, -1.7f, 2.5f, -0.5f));
  EXPECT_EQ(i.x, 1);
  EXPECT_EQ(i.y, -1);
  EXPECT_EQ(i.z, 2);
  EXPECT_EQ(i.w, 0);
  const metal::float2 f(metal::uint2(3u, 4u));
  EXPECT_EQ(f.y, 4.0f);
  const metal::half2 h(metal::float2(1.0f + 0x1p-11f, 65520.0f));
  EXPECT_EQ(h.x.bits, 0x3c00);
  EXPECT_EQ(h.y.bits, 0x7c00);
  const metal::bool2 truth(metal::int2(0, 3));
  EXPECT_FALSE(truth.x);
  EXPECT_TRUE(truth.y);
  static_assert(!std::is_convertible<metal::int4, metal::float4>::value,
                "conversion between vector types is explicit");
}

TEST(MetalVector, ElementWiseFunctions) {
  const metal::float4 v(-1.5f, 0.25f, 2.5f, -2.5f);
  const metal::float4 r = metal::round(v);
  EXPECT_EQ(r.x, -2.0f);
  EXPECT_EQ(r.w, -3.0f);
  const metal::float4 c = metal::clamp(v, 0.0f, 1.0f);
  EXPECT_EQ(c.x, 0.0f);
  EXPECT_EQ(c.z, 1.0f);
  const metal::float4 s = metal::step(0.5f, v);
  EXPECT_EQ(s.y, 0.0f);
  EXPECT_EQ(s.z, 1.0f);
  const metal::float4 m = metal::mix(metal::float4(0), metal::float4(4), 0.5f);
  EXPECT_EQ(m.w, 2.0f);
  const metal::bool4 n = metal::isnan(metal::float4(0.0f) / metal::float4(0.0f, 1.0f, 0.0f, 1.0f));
  EXPECT_TRUE(n.x);
  EXPECT_FALSE(n.y);
  const metal::uint2 sat = metal::addsat(metal::uint2(0xfffffff0u, 1u), 0x20u);
  EXPECT_EQ(sat.x, 0xffffffffu);
  EXPECT_EQ(sat.y, 0x21u);
  const metal::int2 e = metal::extract_bits(metal::int2(0xf0, 0x70), 4, 4);
  EXPECT_EQ(e.x, -1);
  EXPECT_EQ(e.y, 7);
  const metal::int2 sel = metal::select(metal::int2(1, 2), metal::int2(3, 4),
                                        metal::bool2(true, false));
  EXPECT_EQ(sel.x, 3);
  EXPECT_EQ(sel.y, 2);
  EXPECT_EQ(metal::select(1.0f, 2.0f, true), 2.0f);
  const metal::half2 hs = metal::sqrt(metal::half2(4.0f, 9.0f));
  EXPECT_EQ(float(hs.y), 3.0f);
}

//===--- geometry and matrices ----------------------------------------------===//

TEST(MetalGeometry, Basics) {
  const metal::float3 x(1, 0, 0), y(0, 1, 0);
  EXPECT_EQ(metal::cross(x, y).z, 1.0f);
  EXPECT_EQ(metal::dot(metal::float4(1, 2, 3, 4), metal::float4(1)), 10.0f);
  EXPECT_EQ(metal::length(metal::float2(3, 4)), 5.0f);
  EXPECT_EQ(metal::length_squared(metal::float2(3, 4)), 25.0f);
  EXPECT_EQ(metal::distance(metal::float2(1, 1), metal::float2(4, 5)), 5.0f);
  EXPECT_EQ(metal::distance_squared(metal::float2(1, 1), metal::float2(4, 5)), 25.0f);
  EXPECT_EQ(metal::normalize(metal::float2(0, 8)).y, 1.0f);
  const metal::float2 bounced = metal::reflect(metal::float2(1, -1), metal::float2(0, 1));
  EXPECT_EQ(bounced.x, 1.0f);
  EXPECT_EQ(bounced.y, 1.0f);
  // eta = 1: the ray passes straight through.
  const metal::float2 through = metal::refract(metal::float2(0, -1), metal::float2(0, 1), 1.0f);
  EXPECT_EQ(through.y, -1.0f);
  // Grazing ray with eta 2: total internal reflection gives zero.
  const metal::float2 tir = metal::refract(metal::float2(1, 0), metal::float2(0, 1), 2.0f);
  EXPECT_EQ(tir.x, 0.0f);
  EXPECT_EQ(metal::faceforward(y, metal::float3(0, -1, 0), y).y, 1.0f);
  EXPECT_EQ(metal::faceforward(y, y, y).y, -1.0f);
}

TEST(MetalMatrix, ProductsTransposeDeterminant) {
  // Columns (1,3) and (2,4): the matrix [[1 2] [3 4]].
  const metal::float2x2 a(metal::float2(1, 3), metal::float2(2, 4));
  const metal::float2 av = a * metal::float2(1, 1);
  EXPECT_EQ(av.x, 3.0f);
  EXPECT_EQ(av.y, 7.0f);
  const metal::float2 va = metal::float2(1, 1) * a; // row vector: (4, 6)
  EXPECT_EQ(va.x, 4.0f);
  EXPECT_EQ(va.y, 6.0f);
  const metal::float2x2 sq = a * a; // [[7 10] [15 22]]
  EXPECT_EQ(sq[0][0], 7.0f);
  EXPECT_EQ(sq[0][1], 15.0f);
  EXPECT_EQ(sq[1][0], 10.0f);
  EXPECT_EQ(metal::transpose(a)[0][1], 2.0f);
  EXPECT_EQ(metal::determinant(a), -2.0f);
  EXPECT_EQ(metal::determinant(metal::float3x3(2.0f)), 8.0f);
  metal::float4x4 p(1.0f);
  p[1][0] = 5.0f; // shear: determinant unchanged
  p[3][3] = 3.0f;
  EXPECT_EQ(metal::determinant(p), 3.0f);
  const metal::float2x3 rect(metal::float3(1, 2, 3), metal::float3(4, 5, 6));
  const metal::float3 rv = rect * metal::float2(1, 1);
  EXPECT_EQ(rv.z, 9.0f);
  EXPECT_EQ((metal::transpose(rect) * metal::float3(1, 0, 0)).y, 4.0f);
}

//===--- packing ------------------------------------------------------------===//

TEST(MetalPack, SpecificValues) {
  // 0.5 * 255 = 127.5 -> 128 (nearest even).
  EXPECT_EQ(metal::pack_float_to_unorm4x8(metal::float4(1, 0, 0.5f, 1)), 0xff8000ffu);
  EXPECT_EQ(metal::pack_float_to_unorm4x8(metal::float4(2, -1, 0, 0)), 0x000000ffu);
  // 1 -> 127, -1 -> -127 (0x81), 0.5 * 127 = 63.5 -> 64.
  EXPECT_EQ(metal::pack_float_to_snorm4x8(metal::float4(1, -1, 0, 0.5f)), 0x4000817fu);
  EXPECT_EQ(metal::pack_float_to_snorm4x8(metal::float4(-7, 7, std::numeric_limits<float>::quiet_NaN(), 0)), 0x00007f81u);
  EXPECT_EQ(metal::pack_float_to_snorm2x16(metal::float2(1, -1)), 0x80017fffu);
  EXPECT_EQ(metal::pack_float_to_unorm2x16(metal::float2(0.5f, 1)), 0xffff8000u);
  EXPECT_EQ(metal::pack_float_to_unorm10a2(metal::float4(1, 0, 1, 1)), 0xfff003ffu);
  // Linear 0.5 encodes to 1.055 * 0.5^(1/2.4) - 0.055 = 0.7354 -> 187.5 -> 188;
  // alpha stays linear (128).
  EXPECT_EQ(metal::pack_float_to_srgb_unorm4x8(metal::float4(0, 1, 0.5f, 0.5f)), 0x80bcff00u);
  const metal::float4 s = metal::unpack_snorm4x8_to_float(0x0000817fu | 0x80u << 16);
  EXPECT_EQ(s.x, 1.0f);
  EXPECT_EQ(s.y, -1.0f);
  EXPECT_EQ(s.z, -1.0f); // -128/127 clamps to -1
  EXPECT_EQ(metal::unpack_unorm4x8_to_float(0xff00u).y, 1.0f);
  const metal::float4 ten = metal::unpack_unorm10a2_to_float(0xfff003ffu);
  EXPECT_EQ(ten.x, 1.0f);
  EXPECT_EQ(ten.y, 0.0f);
  EXPECT_EQ(ten.w, 1.0f);
  EXPECT_EQ(metal::unpack_snorm2x16_to_float(0x80017fffu).y, -1.0f);
  EXPECT_EQ(metal::unpack_unorm2x16_to_float(0xffff0000u).y, 1.0f);
}

TEST(MetalPack, RoundTrips) {
  for (uint32_t byte = 0; byte < 256; ++byte) {
    const uint32_t word = byte * 0x01010101u;
    EXPECT_EQ(metal::pack_float_to_unorm4x8(metal::unpack_unorm4x8_to_float(word)), word);
    // -128 has no float of its own: it unpacks to -1 and packs as -127.
    const uint32_t snorm = byte == 0x80 ? 0x81818181u : word;
    EXPECT_EQ(metal::pack_float_to_snorm4x8(metal::unpack_snorm4x8_to_float(word)), snorm);
    EXPECT_EQ(metal::pack_float_to_srgb_unorm4x8(metal::unpack_unorm4x8_srgb_to_float(word)), word);
  }
  for (uint32_t value = 0; value < 0x10000; value += 7) {
    const uint32_t word = value | (0xffffu - value) << 16;
    EXPECT_EQ(metal::pack_float_to_unorm2x16(metal::unpack_unorm2x16_to_float(word)), word);
  }
  const uint32_t ten = 0x3ffu | 0x155u << 10 | 0x2aau << 20 | 2u << 30;
  EXPECT_EQ(metal::pack_float_to_unorm10a2(metal::unpack_unorm10a2_to_float(ten)), ten);
}

TEST(MetalPack, AsType) {
  EXPECT_EQ(metal::as_type<metal::uint>(1.0f), 0x3f800000u);
  EXPECT_EQ(metal::as_type<float>(0x40000000u), 2.0f);
  EXPECT_EQ(metal::as_type<metal::ushort>(half(1.0f)), 0x3c00);
  const metal::uint2 halves = metal::as_type<metal::uint2>(metal::float2(1.0f, -2.0f));
  EXPECT_EQ(halves.y, bitsOf(-2.0f));
}

//===--- functions added to every target by the shared library ------------===//

TEST(MetalLibrary, EveryFunctionRunsOnTheHost) {
  float F[8] = {0.5f, 0.25f, 0.75f, 1.5f, 2, 3, 4, 5};
  half H[8] = {0.5f, 0.25f, 0.75f, 1.5f, 2, 3, 4, 5};
  bfloat BF[8] = {0.5f, 0.25f, 0.75f, 1.5f, 2, 3, 4, 5};
  char I8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  metal::uchar U8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  short I16[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  metal::ushort U16[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int I32[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  metal::uint U32[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  long I64[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  metal::ulong U64[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  metal_every_function_on_host(F, H, BF, I8, U8, I16, U16, I32, U32, I64, U64,
                               0);
  EXPECT_EQ(U8[1], 2); // only index 0 is written
  EXPECT_EQ(F[1], 0.25f);
}

TEST(MetalLibrary, RotateTakesAnyIntegerCount) {
  // The count is read as its own type's unsigned bits, modulo the width.
  EXPECT_EQ(metal::rotate(metal::uchar(0x81), 1u), 0x03);
  EXPECT_EQ(metal::rotate(metal::uchar(0x81), -1), 0xc0); // 0xffffffff % 8 = 7
  EXPECT_EQ(metal::rotate(0x12345678u, (signed char)-4), 0x81234567u);
  EXPECT_EQ(metal::rotate(1ul, 65), 2ul);
}

TEST(MetalLibrary, ReducedFloatFunctions) {
  // Each computed in float, rounded once to the type.
  EXPECT_EQ(float(metal::exp10(half(2.0f))), 100.0f);
  EXPECT_EQ(float(metal::rint(half(2.5f))), 2.0f);
  EXPECT_EQ(float(metal::fabs(bfloat(-3.0f))), 3.0f);
  EXPECT_EQ(float(metal::powr(half(4.0f), half(0.5f))), 2.0f);
  // mad: 1.5 * 1.5 = 2.25 and 2.25 + 1 = 3.25, exact in half.
  EXPECT_EQ(float(metal::mad(half(1.5f), half(1.5f), half(1.0f))), 3.25f);
  EXPECT_TRUE(metal::signbit(metal::asinh(half(-0.0f)))); // odd: -0 -> -0
  EXPECT_EQ(float(metal::acosh(half(1.0f))), 0.0f);
  EXPECT_EQ(float(metal::atanh(bfloat(0.0f))), 0.0f);
  EXPECT_EQ(metal::mad(2.0f, 3.0f, 4.0f), 10.0f);
}

TEST(MetalLibrary, IsNormalAtTheFloatLimits) {
  EXPECT_TRUE(metal::isnormal(0x1p-126f));         // smallest normal float
  EXPECT_FALSE(metal::isnormal(0x1.fffffcp-127f)); // largest subnormal
  EXPECT_TRUE(metal::isnormal(-0x1.fffffep127f));
  EXPECT_FALSE(metal::isnormal(std::numeric_limits<float>::infinity()));
  EXPECT_FALSE(metal::isnormal(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_TRUE(metal::isnormal(bfloat(0x1p-126f))); // bfloat: float's range
  EXPECT_FALSE(metal::isnormal(half(0x1p-15f)));   // half: below 2^-14
  EXPECT_TRUE(metal::isnormal(half(0x1p-14f)));
}

TEST(MetalLibrary, VectorPredicatesGiveBoolLanes) {
  const metal::float4 v(-0.0f, 1.0f, std::numeric_limits<float>::infinity(),
                        0x1p-130f);
  const metal::bool4 sign = metal::signbit(v);
  const metal::bool4 normal = metal::isnormal(v);
  static_assert(std::is_same<decltype(metal::signbit(v)), metal::bool4>::value,
                "");
  static_assert(std::is_same<decltype(metal::isnan(metal::half2(0))),
                             metal::bool2>::value,
                "");
  EXPECT_TRUE(sign.x);
  EXPECT_FALSE(sign.y);
  EXPECT_FALSE(normal.x);
  EXPECT_TRUE(normal.y);
  EXPECT_FALSE(normal.z);
  EXPECT_FALSE(normal.w);
}

TEST(MetalLibrary, Constants) {
  EXPECT_EQ(FLT_MAX, std::numeric_limits<float>::max());
  EXPECT_EQ(FLT_MIN, std::numeric_limits<float>::min());
  EXPECT_EQ(FLT_EPSILON, std::numeric_limits<float>::epsilon());
  EXPECT_EQ(HALF_MAX.bits, 0x7bff);
  EXPECT_EQ(HALF_MIN.bits, 0x0400);
  EXPECT_EQ(HALF_EPSILON.bits, 0x1400);
  EXPECT_TRUE(metal::isinf(INFINITY));
  EXPECT_TRUE(metal::isnan(NAN));
}

TEST(MetalLibrary, MatricesOfHalf) {
  // Each lane of a half product rounds after every operation.
  const metal::half2x2 m(metal::half2(1.0f, 3.0f), metal::half2(2.0f, 4.0f));
  const metal::half2 p = m * metal::half2(half(1.0f), half(0x1p-12f));
  // Column sums 1 + 2 * 2^-12 and 3 + 4 * 2^-12 are half an ulp above 1
  // and 3 in half: ties, rounded to the even neighbours 1 and 3.
  EXPECT_EQ(float(p.x), 1.0f);
  EXPECT_EQ(float(p.y), 3.0f);
  EXPECT_EQ(float(metal::determinant(m)), -2.0f);
}

} // namespace
