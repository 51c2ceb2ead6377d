//===- LayoutTest.cpp - Layouts as functions, construction, coalesce -------===//
#include "enigma/Layout/Layout.h"
#include "enigma/Support/Error.h"

#include <gtest/gtest.h>

using namespace enigma::layout;

TEST(Layout, CompactColumnMajorByDefault) {
  Layout l(makeTuple(4, 8));
  EXPECT_EQ(l.str(), "(4,8):(1,4)");
  EXPECT_EQ(l.size(), 32);
  EXPECT_EQ(l.cosize(), 32);
  EXPECT_EQ(l.rank(), 2u);
  EXPECT_EQ(l.depth(), 1);
  for (int64_t i = 0; i < 32; ++i)
    EXPECT_EQ(l(i), i);
}

TEST(Layout, HierarchicalCoordinates) {
  // ((2,2),8):((1,4),2) from CuTe's layout documentation.
  Layout l(makeTuple(makeTuple(2, 2), 8), makeTuple(makeTuple(1, 4), 2));
  EXPECT_EQ(l.str(), "((2,2),8):((1,4),2)");
  EXPECT_EQ(l.size(0), 4);
  EXPECT_EQ(l(makeTuple(makeTuple(1, 1), 3)), 1 + 4 + 6);
  EXPECT_EQ(l(makeTuple(3, 3)), 1 + 4 + 6); // 1-D coordinate inside a mode
  EXPECT_EQ(l(7), l(makeTuple(3, 1)));      // colexicographic index
  EXPECT_EQ(l.cosize(), 1 + 4 + 14 + 1);
  EXPECT_THROW(l(32), enigma::EnigmaError);
  EXPECT_THROW(l(-1), enigma::EnigmaError);
  EXPECT_THROW(l(makeTuple(1, 2, 3)), enigma::EnigmaError);
  EXPECT_THROW(l(makeTuple(4, 0)), enigma::EnigmaError);
}

TEST(Layout, RejectsBadShapes) {
  EXPECT_THROW(Layout(makeTuple(4, 8), makeTuple(1)), enigma::EnigmaError);
  EXPECT_THROW(Layout(makeTuple(4, 0)), enigma::EnigmaError);
  EXPECT_THROW(Layout(makeTuple(4, 8), makeTuple(1, -4)), enigma::EnigmaError);
}

TEST(Layout, IndexToCoord) {
  EXPECT_EQ(indexToCoord(7, makeTuple(makeTuple(2, 2), 8)),
            makeTuple(makeTuple(1, 1), 1));
  EXPECT_THROW(indexToCoord(32, makeTuple(4, 8)), enigma::EnigmaError);
}

TEST(Layout, MakeLayoutConcatenates) {
  Layout l = makeLayout({Layout(4, 2), Layout(makeTuple(2, 3), makeTuple(1, 8))});
  EXPECT_EQ(l.str(), "(4,(2,3)):(2,(1,8))");
}

TEST(Layout, Ordered) {
  EXPECT_EQ(makeOrderedLayout(makeTuple(4, 8), makeTuple(1, 0)).str(),
            "(4,8):(8,1)");
  EXPECT_EQ(makeOrderedLayout(makeTuple(2, 3, 4), makeTuple(1, 2, 0)).str(),
            "(2,3,4):(4,8,1)");
  EXPECT_EQ(makeOrderedLayout(makeTuple(makeTuple(2, 2), 4), makeTuple(1, 0)).str(),
            "((2,2),4):((4,8),1)");
  EXPECT_THROW(makeOrderedLayout(makeTuple(4, 8), makeTuple(0, 1, 2)),
               enigma::EnigmaError);
}

TEST(Layout, Coalesce) {
  Layout l(makeTuple(2, makeTuple(1, 6)), makeTuple(1, makeTuple(6, 2)));
  EXPECT_EQ(coalesce(l).str(), "12:1");
  EXPECT_EQ(coalesce(Layout(makeTuple(4, 2), makeTuple(2, 1))).str(),
            "(4,2):(2,1)");
  EXPECT_EQ(coalesce(Layout(makeTuple(1, 1), makeTuple(3, 5))).str(), "1:0");
  // By-mode: the profile keeps two modes.
  Layout m(makeTuple(makeTuple(2, 2), makeTuple(2, 2)),
           makeTuple(makeTuple(1, 2), makeTuple(8, 16)));
  EXPECT_EQ(coalesce(m, makeTuple(1, 1)).str(), "(4,4):(1,8)");
}
