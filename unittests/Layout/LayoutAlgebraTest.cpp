//===- LayoutAlgebraTest.cpp - CuTe's published algebra examples -----------===//
#include "enigma/Layout/LayoutAlgebra.h"
#include "enigma/Support/Error.h"

#include <gtest/gtest.h>

using namespace enigma::layout;

TEST(LayoutAlgebra, Composition) {
  // CuTe "Layout algebra" documentation examples.
  Layout a(makeTuple(6, 2), makeTuple(8, 2));
  Layout b(makeTuple(4, 3), makeTuple(3, 1));
  EXPECT_EQ(composition(a, b).str(), "((2,2),3):((24,2),8)");
  EXPECT_EQ(composition(Layout(20, 2), Layout(makeTuple(5, 4), makeTuple(4, 1))).str(),
            "(5,4):(8,2)");
  Layout c(makeTuple(10, 2), makeTuple(16, 4));
  EXPECT_EQ(composition(c, Layout(makeTuple(5, 4), makeTuple(1, 5))).str(),
            "(5,(2,2)):(16,(80,4))");
  EXPECT_THROW(composition(Layout(makeTuple(6, 2), makeTuple(1, 10)), Layout(8, 1)),
               enigma::EnigmaError);
}

TEST(LayoutAlgebra, ByModeComposition) {
  Layout a(makeTuple(12, makeTuple(4, 8)), makeTuple(59, makeTuple(13, 1)));
  Tiler tiler = Tiler::byMode({Tiler(Layout(3, 4)), Tiler(Layout(8, 2))});
  EXPECT_EQ(composition(a, tiler).str(), "(3,(2,4)):(236,(26,1))");
}

TEST(LayoutAlgebra, Complement) {
  EXPECT_EQ(complement(Layout(4, 1), 24).str(), "6:4");
  EXPECT_EQ(complement(Layout(6, 4), 24).str(), "4:1");
  EXPECT_EQ(complement(Layout(makeTuple(4, 6), makeTuple(1, 4)), 24).str(), "1:0");
  EXPECT_EQ(complement(Layout(makeTuple(2, 2), makeTuple(1, 6)), 24).str(),
            "(3,2):(2,12)");
  EXPECT_EQ(complement(Layout(makeTuple(4, 2), makeTuple(1, 16)), 64).str(),
            "(4,2):(4,32)");
  EXPECT_THROW(complement(Layout(makeTuple(2, 2), makeTuple(1, 3)), 12),
               enigma::EnigmaError);
  EXPECT_THROW(complement(Layout(makeTuple(4, 2), makeTuple(1, 2)), 12),
               enigma::EnigmaError);
}

TEST(LayoutAlgebra, Divide) {
  Layout a(makeTuple(4, 2, 3), makeTuple(2, 1, 8));
  Layout b(4, 2);
  EXPECT_EQ(logicalDivide(a, b).str(), "((2,2),(2,3)):((4,1),(2,8))");
  Layout m(makeTuple(9, makeTuple(4, 8)), makeTuple(59, makeTuple(13, 1)));
  Tiler t = Tiler::byMode({Tiler(Layout(3, 3)),
                           Tiler(Layout(makeTuple(2, 4), makeTuple(1, 8)))});
  EXPECT_EQ(logicalDivide(m, t).str(),
            "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
  EXPECT_EQ(zippedDivide(m, t).str(),
            "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
  EXPECT_EQ(tiledDivide(m, t).str(),
            "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
  EXPECT_EQ(flatDivide(m, t).str(),
            "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))");
  EXPECT_THROW(logicalDivide(Layout(6, 1), Layout(4, 1)), enigma::EnigmaError);
}

TEST(LayoutAlgebra, Product) {
  Layout a(makeTuple(2, 2), makeTuple(4, 1));
  Layout b(6, 1);
  EXPECT_EQ(logicalProduct(a, b).str(), "((2,2),(2,3)):((4,1),(2,8))");
  Layout tile(makeTuple(2, 5), makeTuple(5, 1));
  Layout grid(makeTuple(3, 4), makeTuple(1, 3));
  EXPECT_EQ(blockedProduct(tile, grid).str(), "((2,3),(5,4)):((5,10),(1,30))");
  EXPECT_EQ(rakedProduct(tile, grid).str(), "((3,2),(4,5)):((10,5),(30,1))");
  // By mode (hand-derived): mode 0 2:5 times 3:1 is (2,3):(5,1) (the
  // complement of 2:5 in 6 is 5:1), mode 1 5:1 times 4:1 is (5,4):(1,5).
  Tiler byMode = Tiler::byMode({Tiler(Layout(3, 1)), Tiler(Layout(4, 1))});
  EXPECT_EQ(zippedProduct(tile, byMode).str(), "((2,5),(3,4)):((5,1),(1,5))");
  EXPECT_EQ(tiledProduct(tile, byMode).str(), "((2,5),3,4):((5,1),1,5)");
  EXPECT_EQ(flatProduct(tile, byMode).str(), "(2,5,3,4):(5,1,1,5)");
}

TEST(LayoutAlgebra, RightInverse) {
  Layout l(makeTuple(4, 8), makeTuple(8, 1));
  Layout inv = rightInverse(l);
  for (int64_t i = 0; i < inv.size(); ++i)
    EXPECT_EQ(l(inv(i)), i);
  EXPECT_EQ(inv.str(), "(8,4):(4,1)");
}

TEST(LayoutAlgebra, Recast) {
  Layout l(makeTuple(4, 8), makeTuple(1, 4));
  EXPECT_EQ(recastLayout(8, 32, l).str(), "(16,8):(1,16)");
  EXPECT_EQ(recastLayout(32, 8, recastLayout(8, 32, l)).str(), l.str());
  EXPECT_EQ(recastLayout(16, 16, l).str(), l.str());
  EXPECT_THROW(recastLayout(0, 16, l), enigma::EnigmaError);
}

TEST(LayoutAlgebra, MakeLayoutTV) {
  TVLayout tv = makeLayoutTV(Layout(makeTuple(4, 32), makeTuple(32, 1)),
                             Layout(makeTuple(4, 4), makeTuple(4, 1)));
  EXPECT_EQ(tv.tiler, makeTuple(16, 128));
  EXPECT_EQ(tv.layout.str(), "((32,4),(4,4)):((64,4),(16,1))");
  EXPECT_EQ(tv.layout.size(), 128 * 16);
  // thr=(4,32):(32,1) numbers thread (m, n) as 32*m + n and val=(4,4):(4,1)
  // numbers value (i, j) as 4*i + j; the raked tile gives thread (m, n) the
  // 4x4 block at rows 4m.., columns 4n.. .
  for (int64_t t = 0; t < 128; ++t)
    for (int64_t v = 0; v < 16; ++v) {
      int64_t tm = t / 32, tn = t % 32; // thr coordinate
      int64_t vm = v / 4, vn = v % 4;   // val coordinate
      int64_t row = 4 * tm + vm, col = 4 * tn + vn;
      EXPECT_EQ(tv.layout(makeTuple(t, v)), row + 16 * col);
    }
}
