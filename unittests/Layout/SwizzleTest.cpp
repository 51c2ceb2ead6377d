//===- SwizzleTest.cpp - Swizzle<B,M,S> and swizzled layouts ---------------===//
#include "enigma/Layout/Swizzle.h"
#include "enigma/Support/Error.h"

#include <gtest/gtest.h>

using namespace enigma::layout;

TEST(Swizzle, MasksAndApplication) {
  Swizzle s(3, 4, 3);
  EXPECT_EQ(s.str(), "Sw<3,4,3>");
  EXPECT_EQ(s.yyyMask(), 0b1110000000);
  EXPECT_EQ(s.zzzMask(), 0b0001110000);
  for (int64_t x = 0; x < 1024; ++x) {
    int64_t expected = x ^ (((x >> 7) & 7) << 4);
    EXPECT_EQ(s(x), expected);
    EXPECT_EQ(s(s(x)), x); // a swizzle is an involution
  }
  Swizzle neg(2, 0, -3);
  EXPECT_EQ(neg(0b11), 0b11011);
  EXPECT_THROW(Swizzle(3, 0, 2), enigma::EnigmaError);
  EXPECT_THROW(Swizzle(-1, 0, 2), enigma::EnigmaError);
}

TEST(Swizzle, SwizzledLayout) {
  SwizzledLayout l(Swizzle(3, 4, 3), 0,
                   Layout(makeTuple(8, 64), makeTuple(64, 1)));
  EXPECT_EQ(l.str(), "Sw<3,4,3> o 0 o (8,64):(64,1)");
  Swizzle s(3, 4, 3);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 64; ++c)
      EXPECT_EQ(l(makeTuple(r, c)), s(r * 64 + c));
  SwizzledLayout tile = composition(
      l, Tiler::byMode({Tiler(Layout(4, 1)), Tiler(Layout(8, 1))}));
  EXPECT_EQ(tile.str(), "Sw<3,4,3> o 0 o (4,8):(64,1)");
  EXPECT_EQ(tile(makeTuple(3, 5)), s(3 * 64 + 5));
}
