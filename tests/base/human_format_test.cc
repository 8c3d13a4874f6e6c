// Durations, byte sizes and counts as people read them.
#include "podscope/base/human_format.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

TEST(FormatDuration, ThreeDigitsInTheLargestFittingUnit) {
  EXPECT_EQ(FormatDuration(0), "0 ns");
  EXPECT_EQ(FormatDuration(950), "950 ns");
  EXPECT_EQ(FormatDuration(999), "999 ns");
  EXPECT_EQ(FormatDuration(1000), "1.00 µs");
  EXPECT_EQ(FormatDuration(1234), "1.23 µs");
  EXPECT_EQ(FormatDuration(12'345), "12.3 µs");
  EXPECT_EQ(FormatDuration(150'000), "150 µs");
  EXPECT_EQ(FormatDuration(999'960), "1.00 ms");
  EXPECT_EQ(FormatDuration(999'999), "1.00 ms");
  EXPECT_EQ(FormatDuration(5'100'000), "5.10 ms");
  EXPECT_EQ(FormatDuration(45'600'000), "45.6 ms");
  EXPECT_EQ(FormatDuration(2'250'000'000), "2.25 s");
  EXPECT_EQ(FormatDuration(3'600'000'000'000), "3600 s");
}

TEST(FormatDuration, RoundingNeverShowsFourDigitsBelowTheNextUnit) {
  EXPECT_EQ(FormatDuration(9'996), "10.0 µs");
  EXPECT_EQ(FormatDuration(99'960), "100 µs");
  EXPECT_EQ(FormatDuration(9'994), "9.99 µs");
}

TEST(FormatDuration, NegativeAndExtremes) {
  EXPECT_EQ(FormatDuration(-1'500), "-1.50 µs");
  EXPECT_EQ(FormatDuration(-999), "-999 ns");
  EXPECT_EQ(FormatDuration(std::numeric_limits<int64_t>::min()),
            "-9223372037 s");
  EXPECT_EQ(FormatDuration(std::numeric_limits<int64_t>::max()),
            "9223372037 s");
}

TEST(FormatBytes, BinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(12u << 20), "12.0 MiB");
  EXPECT_EQ(FormatBytes(4.96505e8), "474 MiB");
  EXPECT_EQ(FormatBytes(3.0 * (uint64_t{1} << 40)), "3.00 TiB");
  EXPECT_EQ(FormatBytes(5000.0 * (uint64_t{1} << 40)), "5000 TiB");
}

TEST(FormatBytes, FractionsRoundAndSignsShow) {
  EXPECT_EQ(FormatBytes(2.6), "3 B");
  EXPECT_EQ(FormatBytes(1023.6), "1.00 KiB");
  EXPECT_EQ(FormatBytes(-2048), "-2.00 KiB");
  EXPECT_EQ(FormatBytes(-0.2), "0 B");
  EXPECT_EQ(FormatBytes(std::numeric_limits<double>::infinity()), "inf B");
}

TEST(FormatCount, GroupsDigitsInThrees) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatCount(std::numeric_limits<uint64_t>::max()),
            "18,446,744,073,709,551,615");
}

TEST(FormatThreeDigits, SignificantDigits) {
  EXPECT_EQ(FormatThreeDigits(0), "0");
  EXPECT_EQ(FormatThreeDigits(3.5), "3.50");
  EXPECT_EQ(FormatThreeDigits(9.996), "10.0");
  EXPECT_EQ(FormatThreeDigits(12.34), "12.3");
  EXPECT_EQ(FormatThreeDigits(99.96), "100");
  EXPECT_EQ(FormatThreeDigits(1234.4), "1234");
}

}  // namespace
}  // namespace podscope::base
