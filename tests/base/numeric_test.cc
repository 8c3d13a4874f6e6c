// Saturating arithmetic on values from files, and the median.
#include "podscope/base/numeric.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace podscope::base {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Numeric, SaturatingAddAndSubClampAtBothEnds) {
  EXPECT_EQ(SaturatingAdd(2, 3), 5);
  EXPECT_EQ(SaturatingAdd(kMax, 1), kMax);
  EXPECT_EQ(SaturatingAdd(kMax - 1, kMax), kMax);
  EXPECT_EQ(SaturatingAdd(kMin, -1), kMin);
  EXPECT_EQ(SaturatingAdd(kMin, kMax), -1);
  EXPECT_EQ(SaturatingSub(5, 7), -2);
  EXPECT_EQ(SaturatingSub(kMax, -1), kMax);
  EXPECT_EQ(SaturatingSub(kMin, 1), kMin);
  EXPECT_EQ(SaturatingSub(0, kMin), kMax);
  EXPECT_EQ(SaturatingSub(-1, kMin), kMax);
}

TEST(Numeric, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Median<int64_t>({}), 0);
  EXPECT_EQ(Median<int64_t>({7}), 7);
  EXPECT_EQ(Median<int64_t>({9, 1, 5}), 5);
  // Even counts: the mean of the two middle values, not the upper one.
  EXPECT_EQ(Median<int64_t>({10, 40, 20, 30}), 25);
  EXPECT_EQ(Median<int64_t>({1, 2}), 1);
  EXPECT_EQ(Median<int64_t>({-3, -2}), -3);
  EXPECT_DOUBLE_EQ(Median<double>({1.0, 2.0}), 1.5);
  EXPECT_DOUBLE_EQ(Median<double>({3.0, 1.0, 2.0, 10.0}), 2.5);
}

TEST(Numeric, MedianOfExtremesDoesNotOverflow) {
  EXPECT_EQ(Median<int64_t>({kMin, kMax}), -1);
  EXPECT_EQ(Median<int64_t>({kMax, kMax}), kMax);
  EXPECT_EQ(Median<int64_t>({kMin, kMin}), kMin);
}

}  // namespace
}  // namespace podscope::base
