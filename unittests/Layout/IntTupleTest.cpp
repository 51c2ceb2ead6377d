//===- IntTupleTest.cpp - Nested integer tuples ----------------------------===//
#include "enigma/Layout/IntTuple.h"
#include "enigma/Support/Error.h"

#include <gtest/gtest.h>

using namespace enigma::layout;

TEST(IntTuple, LeafAndTuple) {
  IntTuple leaf = 8;
  EXPECT_TRUE(leaf.isLeaf());
  EXPECT_EQ(leaf.rank(), 1u);
  EXPECT_EQ(leaf.depth(), 0);
  EXPECT_EQ(leaf.str(), "8");
  IntTuple t = makeTuple(makeTuple(2, 2), 8);
  EXPECT_EQ(t.rank(), 2u);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(t.str(), "((2,2),8)");
  EXPECT_EQ(product(t), 32);
  EXPECT_EQ(sum(t), 12);
  EXPECT_EQ(flatten(t), makeTuple(2, 2, 8));
  EXPECT_EQ(productEach(t), makeTuple(4, 8));
  EXPECT_THROW(t.value(), enigma::EnigmaError);
  EXPECT_THROW(leaf.elements(), enigma::EnigmaError);
  EXPECT_THROW(t.mode(2), enigma::EnigmaError);
}

TEST(IntTuple, Helpers) {
  IntTuple shape = makeTuple(4, makeTuple(2, 3));
  EXPECT_EQ(compactColMajor(shape), makeTuple(1, makeTuple(4, 8)));
  EXPECT_EQ(repeatLike(shape, 0), makeTuple(0, makeTuple(0, 0)));
  EXPECT_TRUE(congruent(shape, makeTuple(9, makeTuple(9, 9))));
  EXPECT_FALSE(congruent(shape, makeTuple(9, 9)));
  EXPECT_EQ(select(makeTuple(5, 6, 7), {2, 0}), makeTuple(7, 5));
  EXPECT_EQ(unflattenLike({7, 8, 9}, shape), makeTuple(7, makeTuple(8, 9)));
  EXPECT_THROW(unflattenLike({1}, shape), enigma::EnigmaError);
  EXPECT_EQ(product(IntTuple::tuple({})), 1);
}
