// The command line's building blocks: flag parsing, JSON writing and the
// formatting of numbers for people.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "flags.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

struct Parsed {
  absl::Status status;
  std::vector<std::string> positional;
  bool help = false;
};

class FlagParserTest : public ::testing::Test {
 protected:
  FlagParserTest() {
    parser_.AddBool("json", &json_);
    parser_.AddString("output", &output_, 'o');
    parser_.AddInt("top", &top_, 0, 100);
  }
  Parsed Parse(std::vector<std::string> args) {
    Parsed p;
    p.status = parser_.Parse(args, &p.positional, &p.help);
    return p;
  }
  FlagParser parser_;
  bool json_ = false;
  std::string output_;
  int64_t top_ = 15;
};

TEST_F(FlagParserTest, FlagsMayComeAnywhereAndInEitherSpelling) {
  Parsed p = Parse({"a", "--json", "--top", "7", "b", "-o", "x.json"});
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.positional, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(json_);
  EXPECT_EQ(top_, 7);
  EXPECT_EQ(output_, "x.json");
  p = Parse({"--top=3", "--output=y.json", "-"});
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(top_, 3);
  EXPECT_EQ(output_, "y.json");
  EXPECT_EQ(p.positional, (std::vector<std::string>{"-"}));
}

TEST_F(FlagParserTest, DoubleDashEndsFlags) {
  Parsed p = Parse({"--", "--json", "-o"});
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_FALSE(json_);
  EXPECT_EQ(p.positional, (std::vector<std::string>{"--json", "-o"}));
}

TEST_F(FlagParserTest, ArgumentsAreTakenInOrderAndHelpStopsParsing) {
  Parsed p = Parse({"--bogus", "--help"});
  EXPECT_FALSE(p.status.ok());
  p = Parse({"-h", "--bogus"});
  EXPECT_TRUE(p.status.ok());
  EXPECT_TRUE(p.help);
}

TEST_F(FlagParserTest, ErrorsNameTheFlagAndWhatWasExpected) {
  auto message = [&](std::vector<std::string> args) {
    return std::string(Parse(std::move(args)).status.message());
  };
  EXPECT_EQ(message({"--bogus"}), "unknown flag '--bogus'");
  EXPECT_EQ(message({"--bogus=1"}), "unknown flag '--bogus'");
  EXPECT_EQ(message({"-x"}), "unknown flag '-x'");
  EXPECT_EQ(message({"--top"}), "--top needs a value");
  EXPECT_EQ(message({"-o"}), "-o needs a value");
  EXPECT_EQ(message({"--top", "abc"}),
            "--top expects a whole number, got 'abc'");
  EXPECT_EQ(message({"--top=12x"}), "--top expects a whole number, got '12x'");
  EXPECT_EQ(message({"--top="}), "--top expects a whole number, got ''");
  EXPECT_EQ(message({"--top", "101"}),
            "--top expects a number from 0 to 100, got 101");
  EXPECT_EQ(message({"--top", "-1"}),
            "--top expects a number from 0 to 100, got -1");
  EXPECT_EQ(message({"--json=yes"}), "--json takes no value");
}

TEST(TextFormat, DurationsUseThreeDigitsAndTheLargestFittingUnit) {
  EXPECT_EQ(FormatDuration(0), "0 ns");
  EXPECT_EQ(FormatDuration(999), "999 ns");
  EXPECT_EQ(FormatDuration(1000), "1.00 µs");
  EXPECT_EQ(FormatDuration(12'345), "12.3 µs");
  EXPECT_EQ(FormatDuration(999'960), "1.00 ms");
  EXPECT_EQ(FormatDuration(150'000), "150 µs");
  EXPECT_EQ(FormatDuration(5'100'000), "5.10 ms");
  EXPECT_EQ(FormatDuration(2'250'000'000), "2.25 s");
  EXPECT_EQ(FormatDuration(3'600'000'000'000), "3600 s");
  EXPECT_EQ(FormatDuration(-1'500), "-1.50 µs");
  EXPECT_EQ(FormatDuration(std::numeric_limits<int64_t>::min()),
            "-9223372037 s");
}

TEST(TextFormat, BytesCountsAndPlurals) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatBytes(12u << 20), "12.0 MiB");
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(Plural(1, "file"), "1 file");
  EXPECT_EQ(Plural(0, "file"), "0 files");
  EXPECT_EQ(Plural(2000, "process", "processes"), "2,000 processes");
}

TEST(TextFormat, WithoutPathPrefix) {
  EXPECT_EQ(WithoutPathPrefix("a/b.podtrace: bad magic", "a/b.podtrace"),
            "bad magic");
  EXPECT_EQ(WithoutPathPrefix("cannot open a/b.podtrace", "a/b.podtrace"),
            "cannot open a/b.podtrace");
  EXPECT_EQ(WithoutPathPrefix("a/b.podtraceX: y", "a/b.podtrace"),
            "a/b.podtraceX: y");
  EXPECT_EQ(WithoutPathPrefix("x: y", ""), "x: y");
}

TEST(TextFormat, UtcTimes) {
  EXPECT_EQ(FormatUtc(0), "1970-01-01 00:00:00.000 UTC");
  EXPECT_EQ(FormatUtc(1'700'000'000'123'456'789),
            "2023-11-14 22:13:20.123 UTC");
  EXPECT_EQ(FormatUtc(-1'000'000), "1969-12-31 23:59:59.999 UTC");
}

}  // namespace
}  // namespace podscope::tools
