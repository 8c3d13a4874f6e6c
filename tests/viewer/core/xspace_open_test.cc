// The viewer's store opens a run folder written like JAX's (two hosts'
// .xplane.pb files) through its import: both hosts on one timeline, with
// the events nested as in the XSpace.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "podscope/viewer/trace_store.h"
#include "xspace_fixtures.h"

namespace podscope::viewer {
namespace {

namespace fs = std::filesystem;
using trace_format::testing::JaxRun;

TEST(XSpaceOpen, JaxRunFolderOpensWithBothHostsOnOneTimeline) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("viewer_xspace_" + std::to_string(getpid()));
  fs::remove_all(dir);
  // The import cache goes to the test's folder, not the user's.
  setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  const JaxRun run = trace_format::testing::WriteJaxRun(dir / "logdir");

  auto store = TraceStore::Open(run.logdir.string());
  ASSERT_TRUE(store.ok()) << store.status();
  const TraceStore& s = **store;
  EXPECT_EQ(s.session().name, "run1");
  ASSERT_EQ(s.processes().size(), 2u);
  ASSERT_EQ(s.hosts().size(), 2u);
  EXPECT_EQ(s.event_count(), 2 * JaxRun::kEventsPerHost);
  EXPECT_EQ(s.tracks().size(), 2 * JaxRun::kTracksPerHost);
  EXPECT_TRUE(s.all_clocks_aligned());
  EXPECT_TRUE(s.problems().empty());

  // Each host's first event (its "tf_XLAEigen" line starts 1 us after
  // "python3", so python3's first step is first), 5 ms apart.
  int64_t first[2] = {0, 0};
  for (const ProcessInfo& p : s.processes()) {
    const int h = p.host_name == "worker-1" ? 1 : 0;
    int64_t earliest = INT64_MAX;
    for (TrackId t : p.tracks) {
      const SliceColumns& c = s.data(t).slices;
      if (s.tracks()[t].name == "python3") {
        // train_step, PjitFunction, ExecuteHelper: three depths.
        EXPECT_EQ(c.depth_count(), 3u);
        EXPECT_EQ(c.size(), 9u);
      }
      for (uint32_t i = 0; i < c.size(); ++i) {
        earliest = std::min(earliest, c.start(i));
      }
    }
    first[h] = earliest;
  }
  EXPECT_EQ(first[1] - first[0], JaxRun::kHostSkewNs);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace podscope::viewer
