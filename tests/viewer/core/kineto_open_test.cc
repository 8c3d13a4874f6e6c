// Opening a folder of PyTorch profiler (Kineto) traces in the viewer's
// store: the import dispatch converts the per-rank .json.gz files, and the
// ranks load as the processes of one session with their flows.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "gtest/gtest.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

namespace fs = std::filesystem;

class KinetoOpenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("podscope-kineto-open-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "job");
    const fs::path data = fs::path(PODSCOPE_SHARED_DATA) / "kineto";
    for (const char* name :
         {"sampled_rank-0.json.gz", "sampled_rank-1.json.gz"}) {
      fs::copy_file(data / name, dir_ / "job" / name);
    }
    // Imports go to a cache of the test's own.
    setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("XDG_CACHE_HOME");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(KinetoOpenTest, RanksOpenAsOneSessionWithLaunchToKernelFlows) {
  auto store = TraceStore::Open((dir_ / "job").string());
  ASSERT_TRUE(store.ok()) << store.status();
  const TraceStore& s = **store;
  EXPECT_TRUE(s.problems().empty());
  ASSERT_EQ(s.processes().size(), 2u);
  std::map<int, const ProcessInfo*> ranks;
  for (const ProcessInfo& p : s.processes()) ranks[p.process_index] = &p;
  ASSERT_TRUE(ranks.count(0) && ranks.count(1));
  EXPECT_EQ(ranks[0]->process_count, 128);
  EXPECT_EQ(ranks[0]->session_id, ranks[1]->session_id);
  EXPECT_EQ(ranks[0]->session_id, "job");  // the folder the ranks are in
  EXPECT_EQ(ranks[0]->pid, 4037);
  EXPECT_EQ(ranks[1]->pid, 4045);
  // Every complete ("X") event of the two files: 4,811 + 4,676.
  EXPECT_EQ(s.event_count(), 9487u);
  EXPECT_EQ(s.slice_count(), 9487u);
  EXPECT_TRUE(s.all_clocks_aligned());

  // Rank 0's launch at 1682725898082212 us and the kernel it started.
  TrackId launch_track = 0, kernel_track = 0;
  bool found_launch = false, found_kernel = false;
  for (TrackId t : ranks[0]->tracks) {
    const TrackInfo& info = s.tracks()[t];
    if (info.name == "thread 4037 (python3.8)") {
      launch_track = t;
      found_launch = true;
    }
    if (info.name == "GPU 0 stream 23") {
      EXPECT_EQ(info.kind, trace_format::proto::TRACK_KIND_DEVICE_STREAM);
      kernel_track = t;
      found_kernel = true;
    }
  }
  ASSERT_TRUE(found_launch && found_kernel);
  const auto launch_name = s.FindString("cudaLaunchKernel");
  ASSERT_TRUE(launch_name.has_value());
  std::optional<EventRef> launch;
  const size_t slices = s.data(launch_track).slices.size();
  for (uint32_t i = 0; i < slices; ++i) {
    const EventRef e{launch_track, trace_format::EventKind::kSlice, i};
    if (s.NameOf(e) == *launch_name &&
        s.StartOf(e) == int64_t{1682725898082212} * 1000) {
      launch = e;
    }
  }
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(s.DurationOf(*launch), 18000);
  const auto ends = s.Flows(*launch);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].event.track, kernel_track);
  EXPECT_EQ(s.StartOf(ends[0].event), int64_t{1682725898082228} * 1000);
  EXPECT_EQ(s.DurationOf(ends[0].event), 10000);
  EXPECT_EQ(s.str(s.NameOf(ends[0].event)),
            "void fbgemm_gpu::permute_2D_lengths_kernel<int>(int, int, int "
            "const*, int const*, int*)");
}

}  // namespace
}  // namespace podscope::viewer
