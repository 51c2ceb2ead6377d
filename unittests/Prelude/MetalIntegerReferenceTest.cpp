//===- MetalIntegerReferenceTest.cpp - Integer functions, wide references -===//
//
// Every integer function of the Metal semantics library at every width,
// against a reference computed here in __int128 or bit by bit, never by
// running the code under test. Part of MetalHostTest (and, built with
// clang++, MetalHostTestClang); the other values are in MetalHostTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "metal_semantics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

namespace {
//===--- integer functions against wide references ------------------------===//
//
// Every integer function at every width, against a reference computed in
// __int128 or bit by bit: exhaustively for 8-bit operands (every pair) and
// 8/16-bit unary functions, on edge values and random operands otherwise.

template <class T> using Wide = __int128;

template <class T> constexpr int widthOf() { return int(sizeof(T) * 8); }

// Metal reads `char` as signed.
template <class T> constexpr bool signedInt() {
  return std::is_same<T, char>::value || std::is_signed<T>::value;
}
template <class T> Wide<T> lowest() {
  return signedInt<T>() ? -(Wide<T>(1) << (widthOf<T>() - 1)) : 0;
}
template <class T> Wide<T> highest() {
  return signedInt<T>() ? (Wide<T>(1) << (widthOf<T>() - 1)) - 1
                        : (Wide<T>(1) << widthOf<T>()) - 1;
}
// The value Metal means by x, exactly.
template <class T> Wide<T> value(T x) {
  using U = std::make_unsigned_t<T>;
  const Wide<T> bits = Wide<T>(U(x));
  return signedInt<T>() && bits > highest<T>()
             ? bits - (Wide<T>(1) << widthOf<T>())
             : bits;
}
// T with the low bits of w (two's complement wrap-around).
template <class T> T wrap(Wide<T> w) {
  using U = std::make_unsigned_t<T>;
  U bits = 0;
  for (int i = 0; i < widthOf<T>(); ++i)
    if ((w >> i) & 1)
      bits = U(bits | (U(1) << i));
  T out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
template <class T> T saturate(Wide<T> w) {
  return wrap<T>(w < lowest<T>()    ? lowest<T>()
                 : w > highest<T>() ? highest<T>()
                                    : w);
}
template <class T> bool bit(T x, int i) {
  using U = std::make_unsigned_t<T>;
  return (U(x) >> i) & 1u;
}

template <class T> void checkBinary(T x, T y) {
  const Wide<T> a = value(x), b = value(y);
  SCOPED_TRACE(testing::Message() << "x=" << +x << " y=" << +y);
  EXPECT_EQ(metal::addsat(x, y), saturate<T>(a + b));
  EXPECT_EQ(metal::subsat(x, y), saturate<T>(a - b));
  EXPECT_EQ(metal::absdiff(x, y), wrap<T>(a > b ? a - b : b - a));
  // The high half of the exact product: an arithmetic shift of it. Two
  // 64-bit unsigned values need the unsigned 128-bit product.
  if (!signedInt<T>() && widthOf<T>() == 64) {
    using U = unsigned __int128;
    const U product = U(a) * U(b), sum = product + U(b);
    EXPECT_EQ(metal::mulhi(x, y), wrap<T>(Wide<T>(product >> 64)));
    EXPECT_EQ(metal::madhi(x, y, x), wrap<T>(Wide<T>(product >> 64) + a));
    EXPECT_EQ(metal::madsat(x, y, y), sum > U(highest<T>())
                                          ? wrap<T>(highest<T>())
                                          : wrap<T>(Wide<T>(sum)));
  } else {
    const Wide<T> product = a * b;
    const Wide<T> high = product >> widthOf<T>();
    EXPECT_EQ(metal::mulhi(x, y), wrap<T>(high));
    EXPECT_EQ(metal::madhi(x, y, x), wrap<T>(high + a));
    EXPECT_EQ(metal::madsat(x, y, y), saturate<T>(product + b));
  }
  EXPECT_EQ(metal::min(x, y), a < b ? x : y);
  EXPECT_EQ(metal::max(x, y), a < b ? y : x);
  EXPECT_EQ(metal::clamp(x, metal::min(x, y), metal::max(x, y)), x);
  // rotate: bit i goes to bit (i + count) mod width; count read unsigned.
  const int count =
      int((unsigned long long)(std::make_unsigned_t<T>(y)) % widthOf<T>());
  Wide<T> rotated = 0;
  for (int i = 0; i < widthOf<T>(); ++i)
    if (bit(x, i))
      rotated |= Wide<T>(1) << ((i + count) % widthOf<T>());
  EXPECT_EQ(metal::rotate(x, y), wrap<T>(rotated));
}

template <class T> void checkUnary(T x) {
  const Wide<T> a = value(x);
  SCOPED_TRACE(testing::Message() << "x=" << +x);
  EXPECT_EQ(metal::abs(x), wrap<T>(a < 0 ? -a : a));
  int leading = 0, trailing = 0, ones = 0;
  while (leading < widthOf<T>() && !bit(x, widthOf<T>() - 1 - leading))
    ++leading;
  while (trailing < widthOf<T>() && !bit(x, trailing))
    ++trailing;
  Wide<T> reversed = 0;
  for (int i = 0; i < widthOf<T>(); ++i) {
    ones += bit(x, i);
    if (bit(x, i))
      reversed |= Wide<T>(1) << (widthOf<T>() - 1 - i);
  }
  EXPECT_EQ(metal::clz(x), T(leading));
  EXPECT_EQ(metal::ctz(x), T(trailing));
  EXPECT_EQ(metal::popcount(x), T(ones));
  EXPECT_EQ(metal::reverse_bits(x), wrap<T>(reversed));
}

// extract_bits / insert_bits for every offset and count that fit.
template <class T> void checkBitFields(T x, T y) {
  for (unsigned offset = 0; offset < unsigned(widthOf<T>()); ++offset)
    for (unsigned bits = 0; offset + bits <= unsigned(widthOf<T>()); ++bits) {
      SCOPED_TRACE(testing::Message()
                   << "offset=" << offset << " bits=" << bits);
      Wide<T> field = 0, merged = 0;
      for (unsigned i = 0; i < bits; ++i)
        if (bit(x, int(offset + i)))
          field |= Wide<T>(1) << i;
      if (signedInt<T>() && bits > 0 && bit(x, int(offset + bits - 1)))
        field -= Wide<T>(1) << bits; // sign-extend the top field bit
      for (int i = 0; i < widthOf<T>(); ++i) {
        const bool inside =
            unsigned(i) >= offset && unsigned(i) < offset + bits;
        if (inside ? bit(y, int(unsigned(i) - offset)) : bit(x, i))
          merged |= Wide<T>(1) << i;
      }
      EXPECT_EQ(metal::extract_bits(x, offset, bits), wrap<T>(field));
      EXPECT_EQ(metal::insert_bits(x, y, offset, bits), wrap<T>(merged));
    }
}

template <class T> std::vector<T> edgeValues() {
  std::vector<T> v;
  for (Wide<T> w : {Wide<T>(0), Wide<T>(1), Wide<T>(2), Wide<T>(-1),
                    Wide<T>(-2), lowest<T>(), lowest<T>() + 1, highest<T>(),
                    highest<T>() - 1, highest<T>() / 2, highest<T>() / 2 + 1})
    v.push_back(wrap<T>(w));
  return v;
}

template <class T> std::vector<T> randomValues(size_t n) {
  std::mt19937_64 gen(0x5eed + widthOf<T>());
  std::vector<T> v = edgeValues<T>();
  while (v.size() < n)
    v.push_back(wrap<T>(Wide<T>(gen())));
  return v;
}

template <class T> class MetalIntegerReference : public ::testing::Test {};
using AllIntegerTypes =
    ::testing::Types<char, signed char, metal::uchar, short, metal::ushort, int,
                     metal::uint, long, metal::ulong>;
TYPED_TEST_SUITE(MetalIntegerReference, AllIntegerTypes);

TYPED_TEST(MetalIntegerReference, BinaryFunctions) {
  using T = TypeParam;
  if (widthOf<T>() == 8) {
    for (int x = 0; x < 256; ++x)
      for (int y = 0; y < 256; ++y)
        checkBinary(wrap<T>(x), wrap<T>(y));
  } else {
    const std::vector<T> values = randomValues<T>(400);
    for (T x : values)
      for (T y : values)
        checkBinary(x, y);
  }
}

TYPED_TEST(MetalIntegerReference, UnaryFunctions) {
  using T = TypeParam;
  if (widthOf<T>() <= 16) {
    for (long long x = 0; x < (1ll << widthOf<T>()); ++x)
      checkUnary(wrap<T>(x));
  } else {
    for (T x : randomValues<T>(20000))
      checkUnary(x);
    for (int i = 0; i < widthOf<T>(); ++i) { // one bit, and all but one
      checkUnary(wrap<T>(Wide<T>(1) << i));
      checkUnary(wrap<T>(~(Wide<T>(1) << i)));
    }
  }
}

TYPED_TEST(MetalIntegerReference, BitFields) {
  using T = TypeParam;
  for (T x : randomValues<T>(40))
    checkBitFields(x, wrap<T>(~value(x) * 3));
}

// Vector operators wrap lane by lane at the element's width, shift counts
// modulo the width, as Metal defines.
template <class T> void checkVectorOperators(T x, T y) {
  const metal::vec<T, 4> a(x, y, T(x ^ y), x), b(y, x, x, T(~y));
  const metal::vec<T, 4> sum = a + b, difference = a - b, product = a * b;
  const metal::vec<T, 4> negated = -a, left = a << b, right = a >> b;
  for (int i = 0; i < 4; ++i) {
    const Wide<T> p = value(a[i]), q = value(b[i]);
    const int count =
        int((unsigned long long)(std::make_unsigned_t<T>(b[i])) % widthOf<T>());
    EXPECT_EQ(sum[i], wrap<T>(p + q));
    EXPECT_EQ(difference[i], wrap<T>(p - q));
    EXPECT_EQ(product[i], wrap<T>(p * q));
    EXPECT_EQ(negated[i], wrap<T>(-p));
    EXPECT_EQ(left[i], wrap<T>(p * (Wide<T>(1) << count)));
    // Arithmetic shift for signed lanes: floor division by 2^count.
    const Wide<T> divisor = Wide<T>(1) << count;
    EXPECT_EQ(right[i],
              wrap<T>(p >= 0 ? p / divisor : -((-p + divisor - 1) / divisor)));
  }
}

TYPED_TEST(MetalIntegerReference, VectorOperatorsWrap) {
  using T = TypeParam;
  const std::vector<T> values = randomValues<T>(60);
  for (T x : values)
    for (T y : values)
      checkVectorOperators(x, y);
}

} // namespace
