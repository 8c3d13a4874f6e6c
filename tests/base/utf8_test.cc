#include "podscope/base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

TEST(Utf8, WellFormedTextIsValidAndKeptAsIs) {
  for (const std::string s :
       {"", "ascii", "caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80",
        "\xF4\x8F\xBF\xBF" /* U+10FFFF */}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(ToValidUtf8(s), s);
  }
}

TEST(Utf8, IllFormedBytesBecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  struct Case {
    std::string in, out;
  } cases[] = {
      {"\xFF", fffd},                                       // never a lead byte
      {"a\xC3", "a" + fffd},                                // cut mid-character
      {"\xC0\xAF", fffd + fffd},                            // overlong '/'
      {"\xE0\x80\xAF", fffd + fffd + fffd},                 // overlong, 3 bytes
      {"\xED\xA0\x80", fffd + fffd + fffd},                 // a surrogate
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},      // beyond U+10FFFF
      {"thread-\xE9t\xE9", "thread-" + fffd + "t" + fffd},  // Latin-1
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(IsValidUtf8(c.in)) << c.in;
    EXPECT_EQ(ToValidUtf8(c.in), c.out) << c.in;
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(c.in)));
  }
}

TEST(Utf8, SequenceLengthOnlyForMultiByteStarts) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 0u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9", 0), 2u);
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98", 0), 0u);  // truncated
}

}  // namespace
}  // namespace podscope::base
