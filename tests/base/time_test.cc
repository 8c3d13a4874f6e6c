// Wall-clock time and durations from the environment.
#include "podscope/base/time.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace podscope::base {
namespace {

TEST(Time, RealtimeIsTheUnixEpochClock) {
  const int64_t ns = RealtimeNs();
  // After 2020-01-01 and before 2200: nanoseconds, not seconds or ticks.
  EXPECT_GT(ns, int64_t{1'577'836'800} * 1'000'000'000);
  EXPECT_LT(ns, int64_t{7'258'118'400} * 1'000'000'000);
}

TEST(Time, EnvMsReadsPositiveMillisecondsOnly) {
  const char* kName = "PODSCOPE_TEST_ENV_MS";
  unsetenv(kName);
  EXPECT_EQ(EnvMs(kName, absl::Seconds(3)), absl::Seconds(3));
  setenv(kName, "250", 1);
  EXPECT_EQ(EnvMs(kName, absl::Seconds(3)), absl::Milliseconds(250));
  for (const char* bad :
       {"", "0", "-5", "12ms", "1e3", "99999999999999999999"}) {
    setenv(kName, bad, 1);
    EXPECT_EQ(EnvMs(kName, absl::Seconds(3)), absl::Seconds(3)) << bad;
  }
  unsetenv(kName);
}

}  // namespace
}  // namespace podscope::base
