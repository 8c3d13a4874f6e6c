// Crc32 against zlib's crc32(): every length around the fold sizes, every
// alignment, chained calls, and the baseline path (the cpu_baseline run).
#include "crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

namespace podscope::trace_format {
namespace {

uint32_t Zlib(uint32_t crc, const std::string& s, size_t offset, size_t n) {
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(s.data() + offset),
            static_cast<uInt>(n)));
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(Crc32, MatchesZlibOnEveryLengthAndAlignment) {
  const std::string data = RandomBytes(4096 + 64, 1);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t n = 0; n <= 1100; ++n) {
      ASSERT_EQ(Crc32(0, data.data() + offset, n), Zlib(0, data, offset, n))
          << "offset " << offset << ", length " << n;
    }
  }
}

TEST(Crc32, ChainsLikeZlib) {
  const std::string data = RandomBytes(1 << 20, 2);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 50; ++round) {
    uint32_t ours = 0, theirs = 0;
    size_t at = 0;
    while (at < data.size()) {
      const size_t n = std::min<size_t>(data.size() - at, rng() % 70000);
      ours = Crc32(ours, data.data() + at, n);
      theirs = Zlib(theirs, data, at, n);
      at += n;
    }
    ASSERT_EQ(ours, theirs) << "round " << round;
  }
  EXPECT_EQ(Crc32(0, data.data(), data.size()), Zlib(0, data, 0, data.size()));
}

TEST(Crc32, KnownValuesAndUniformInputs) {
  // The check value of CRC-32 (ISO-HDLC), and runs of one byte value,
  // which exercise the folds' carries on zeros and ones.
  EXPECT_EQ(Crc32(0, "123456789", 9), 0xCBF43926u);
  for (char fill : {'\0', '\xff', '\x55'}) {
    const std::string s(100000, fill);
    EXPECT_EQ(Crc32(0, s.data(), s.size()), Zlib(0, s, 0, s.size()));
    EXPECT_EQ(Crc32(0xFFFFFFFFu, s.data(), s.size()),
              Zlib(0xFFFFFFFFu, s, 0, s.size()));
  }
}

}  // namespace
}  // namespace podscope::trace_format
