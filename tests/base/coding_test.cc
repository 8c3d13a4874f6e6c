// Byte coding and wrapping arithmetic: the layouts files depend on, the
// limits damaged input hits, and the values at the edges of int64.
#include "podscope/base/coding.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Fixed, LittleEndianLayoutWhateverTheHost) {
  std::string s;
  PutFixed16(&s, 0x0102);
  PutFixed32(&s, 0x03040506u);
  PutFixed64(&s, 0x0708090a0b0c0d0eull);
  EXPECT_EQ(s, std::string("\x02\x01\x06\x05\x04\x03"
                           "\x0e\x0d\x0c\x0b\x0a\x09\x08\x07"));
  EXPECT_EQ(DecodeFixed16(s.data()), 0x0102);
  EXPECT_EQ(DecodeFixed32(s.data() + 2), 0x03040506u);
  EXPECT_EQ(DecodeFixed64(s.data() + 6), 0x0708090a0b0c0d0eull);
}

TEST(Fixed, HighBitsSurvive) {
  char buf[8];
  EncodeFixed32(buf, 0xFFFFFFFFu);
  EXPECT_EQ(DecodeFixed32(buf), 0xFFFFFFFFu);
  EncodeFixed64(buf, ~uint64_t{0});
  EXPECT_EQ(DecodeFixed64(buf), ~uint64_t{0});
  EncodeFixed16(buf, 0x8001);
  EXPECT_EQ(DecodeFixed16(buf), 0x8001);
}

TEST(Fixed, DoublesKeepEveryBit) {
  char buf[8];
  for (double d : {0.0, -0.0, 1.5, -3.25e300, 5e-324,
                   std::numeric_limits<double>::infinity()}) {
    EncodeDouble(buf, d);
    const double back = DecodeDouble(buf);
    EXPECT_EQ(back, d);
    EXPECT_EQ(std::signbit(back), std::signbit(d));
  }
  EncodeDouble(buf, 1.0);  // 0x3FF0000000000000
  EXPECT_EQ(std::string(buf, 8), std::string("\0\0\0\0\0\0\xF0\x3F", 8));
  EncodeDouble(buf, std::nan(""));
  EXPECT_TRUE(std::isnan(DecodeDouble(buf)));
}

TEST(Varint, ProtobufLayout) {
  std::string s;
  PutVarint64(&s, 1);
  PutVarint64(&s, 300);
  EXPECT_EQ(s, std::string("\x01\xAC\x02"));
  s.clear();
  PutVarint64(&s, ~uint64_t{0});
  EXPECT_EQ(s, std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x01"));
}

TEST(Varint, RoundTripsAtEveryLengthBoundary) {
  std::vector<uint64_t> values = {0, ~uint64_t{0}};
  for (int bits = 7; bits < 64; bits += 7) {
    values.push_back((uint64_t{1} << bits) - 1);
    values.push_back(uint64_t{1} << bits);
  }
  std::string s;
  for (uint64_t v : values) PutVarint64(&s, v);
  std::string_view in = s;
  for (uint64_t v : values) {
    uint64_t got = 0;
    const size_t before = in.size();
    ASSERT_TRUE(GetVarint64(&in, &got)) << v;
    EXPECT_EQ(got, v);
    EXPECT_EQ(before - in.size(), VarintLength(v)) << v;
  }
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(VarintLength(0), 1u);
  EXPECT_EQ(VarintLength(127), 1u);
  EXPECT_EQ(VarintLength(128), 2u);
  EXPECT_EQ(VarintLength(~uint64_t{0}), kMaxVarint64Bytes);
}

TEST(Varint, TruncatedInputIsRefusedAndLeftAlone) {
  const std::string s("\xAC\x02", 2);
  for (size_t n = 0; n < s.size(); ++n) {
    std::string_view in(s.data(), n);
    uint64_t v = 7;
    EXPECT_FALSE(GetVarint64(&in, &v)) << n << " bytes";
    EXPECT_EQ(in.size(), n) << "input unchanged on failure";
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    EXPECT_EQ(DecodeVarint64(p, p + n, &v), nullptr);
  }
}

TEST(Varint, MoreThanTenBytesIsRefused) {
  // Eleven continuation bytes: a decoder must stop, not run on.
  const std::string s(11, '\x80');
  std::string_view in = s;
  uint64_t v;
  EXPECT_FALSE(GetVarint64(&in, &v));
  // Ten bytes ending properly are accepted; bits past 64 are dropped.
  const std::string ten = std::string(9, '\xFF') + "\x7F";
  in = ten;
  ASSERT_TRUE(GetVarint64(&in, &v));
  EXPECT_EQ(v, ~uint64_t{0});
}

TEST(Varint, ThirtyTwoBitReadsRefuseWiderValues) {
  std::string s;
  PutVarint64(&s, 0xFFFFFFFFu);
  PutVarint64(&s, uint64_t{1} << 32);
  std::string_view in = s;
  uint32_t v = 0;
  ASSERT_TRUE(GetVarint32(&in, &v));
  EXPECT_EQ(v, 0xFFFFFFFFu);
  const size_t left = in.size();
  EXPECT_FALSE(GetVarint32(&in, &v));
  EXPECT_EQ(in.size(), left);
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  EXPECT_EQ(DecodeVarint32(p, p + in.size(), &v), nullptr);
}

TEST(ZigZag, SmallMagnitudesStaySmall) {
  EXPECT_EQ(ZigZagEncode64(0), 0u);
  EXPECT_EQ(ZigZagEncode64(-1), 1u);
  EXPECT_EQ(ZigZagEncode64(1), 2u);
  EXPECT_EQ(ZigZagEncode64(-2), 3u);
  EXPECT_EQ(ZigZagEncode64(kMax), ~uint64_t{0} - 1);
  EXPECT_EQ(ZigZagEncode64(kMin), ~uint64_t{0});
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{123456789},
                    int64_t{-987654321}, kMin, kMax}) {
    EXPECT_EQ(ZigZagDecode64(ZigZagEncode64(v)), v);
  }
}

TEST(Wrapping, DeltasUndoExactlyAcrossTheWholeRange) {
  const std::vector<int64_t> times = {kMin,     kMax,     0, -1,
                                      kMin + 1, kMax - 1, 42};
  int64_t previous = 0;
  int64_t rebuilt = 0;
  for (int64_t t : times) {
    const int64_t delta = WrappingSub(t, previous);
    rebuilt = WrappingAdd(rebuilt, delta);
    EXPECT_EQ(rebuilt, t);
    // The same through the zigzag varint path readers take.
    EXPECT_EQ(WrappingAddDelta(previous, static_cast<uint64_t>(ZigZagDecode64(
                                             ZigZagEncode64(delta)))),
              t);
    previous = t;
  }
  EXPECT_EQ(WrappingAdd(kMax, 1), kMin);
  EXPECT_EQ(WrappingSub(kMin, 1), kMax);
}

TEST(Wrapping, AbsDifferenceIsExact) {
  EXPECT_EQ(AbsDifference(kMax, kMin), ~uint64_t{0});
  EXPECT_EQ(AbsDifference(kMin, kMax), ~uint64_t{0});
  EXPECT_EQ(AbsDifference(-5, 5), 10u);
  EXPECT_EQ(AbsDifference(7, 7), 0u);
}

TEST(Wrapping, SaturatingRound) {
  EXPECT_EQ(SaturatingRound(1.5), 2);
  EXPECT_EQ(SaturatingRound(-1.5), -2);
  EXPECT_EQ(SaturatingRound(1e300), kMax);
  EXPECT_EQ(SaturatingRound(-1e300), kMin);
  EXPECT_EQ(SaturatingRound(std::numeric_limits<double>::infinity()), kMax);
  EXPECT_EQ(SaturatingRound(-std::numeric_limits<double>::infinity()), kMin);
  EXPECT_EQ(SaturatingRound(std::nan("")), 0);
}

TEST(Integral, WholeNumbersThatSurviveInt64) {
  EXPECT_TRUE(IsIntegral(0.0));
  EXPECT_TRUE(IsIntegral(-42.0));
  EXPECT_TRUE(IsIntegral(8.999e15));
  EXPECT_FALSE(IsIntegral(9.0e15));
  EXPECT_FALSE(IsIntegral(0.5));
  EXPECT_FALSE(IsIntegral(-0.0)) << "an integer would lose the sign";
  EXPECT_FALSE(IsIntegral(std::nan("")));
  EXPECT_FALSE(IsIntegral(std::numeric_limits<double>::infinity()));
}

TEST(Integral, AllIntegralIsVacuouslyTrueForNoValues) {
  EXPECT_TRUE(AllIntegral(std::vector<double>{}));
  EXPECT_TRUE(AllIntegral(std::vector<double>{1, 2, -3}));
  EXPECT_FALSE(AllIntegral(std::vector<double>{1, 2.5}));
  EXPECT_FALSE(AllIntegral(std::vector<double>{1, -0.0}));
  struct Sample {
    int64_t ts;
    double value;
  };
  const std::vector<Sample> samples = {{1, 10}, {2, 11}};
  EXPECT_TRUE(AllIntegral(samples, [](const Sample& s) { return s.value; }));
  const std::vector<Sample> none;
  EXPECT_TRUE(AllIntegral(none, [](const Sample& s) { return s.value; }));
}

}  // namespace
}  // namespace podscope::base
