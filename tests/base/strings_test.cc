// ContainsIgnoreCase: ASCII case folded, everything else exact.
#include "podscope/base/strings.h"

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

TEST(ContainsIgnoreCase, FoldsAsciiLettersOnly) {
  EXPECT_TRUE(ContainsIgnoreCase("TrainStep 12", "step"));
  EXPECT_TRUE(ContainsIgnoreCase("train_STEP", "Step"));
  EXPECT_TRUE(ContainsIgnoreCase("NCCL allreduce", "nccl"));
  EXPECT_FALSE(ContainsIgnoreCase("ste p", "step"));
  EXPECT_FALSE(ContainsIgnoreCase("st", "step"));
  // Bytes outside ASCII letters compare exactly: '@' is not '`' folded.
  EXPECT_FALSE(ContainsIgnoreCase("@", "`"));
  EXPECT_TRUE(ContainsIgnoreCase("\xC3\x89tape", "\xC3\x89TAPE"));
  EXPECT_FALSE(ContainsIgnoreCase("\xC3\xA9tape", "\xC3\x89tape"));
}

TEST(ContainsIgnoreCase, EdgeLengths) {
  EXPECT_TRUE(ContainsIgnoreCase("", ""));
  EXPECT_TRUE(ContainsIgnoreCase("abc", ""));
  EXPECT_FALSE(ContainsIgnoreCase("", "a"));
  EXPECT_TRUE(ContainsIgnoreCase("abc", "ABC"));
  EXPECT_TRUE(ContainsIgnoreCase("xxabc", "ABC"));
  EXPECT_FALSE(ContainsIgnoreCase("xxab", "ABC"));
}

}  // namespace
}  // namespace podscope::base
