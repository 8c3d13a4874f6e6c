// The statistics behind `podscope summary`, computed in process.
#include "summary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "podscope/trace_format/writer.h"
#include "podscope/viewer/slice_columns.h"
#include "trace_fixtures.h"

namespace podscope::tools {
namespace {

using trace_format::Slice;
using trace_format::SliceOrder;

Slice S(int64_t start, int64_t duration, uint32_t name = 1) {
  return Slice{start, duration, name, 0};
}

std::vector<int64_t> SelfTimesOf(std::vector<Slice> slices) {
  std::sort(slices.begin(), slices.end(), SliceOrder);
  return viewer::ComputeSelfTimes(slices);
}

TEST(SelfTimes, SubtractsDirectChildrenOnly) {
  // P [0,100] > A [10,30] > G [15,20]; P > B [50,80].
  const std::vector<int64_t> self =
      SelfTimesOf({S(0, 100), S(10, 20), S(15, 5), S(50, 30)});
  // G is A's child, so P loses only A's and B's time.
  EXPECT_EQ(self, (std::vector<int64_t>{100 - 20 - 30, 20 - 5, 5, 30}));
}

TEST(SelfTimes, LeafAndTopLevelSlicesKeepTheirDuration) {
  EXPECT_EQ(SelfTimesOf({S(0, 10), S(20, 10), S(40, 0)}),
            (std::vector<int64_t>{10, 10, 0}));
  EXPECT_TRUE(viewer::ComputeSelfTimes({}).empty());
}

TEST(SelfTimes, OverlappingChildrenAreCountedOnce) {
  // P [0,100] holds A [10,60] and B [40,80], which overlap each other
  // (B does not fit inside A, so both are P's children); together they
  // cover [10,80].
  EXPECT_EQ(SelfTimesOf({S(0, 100), S(10, 50), S(40, 40)}),
            (std::vector<int64_t>{30, 50, 40}));
}

TEST(SelfTimes, SliceCrossingTheParentEndIsNotAChild) {
  // X [50,150] starts inside P [0,100] but outlives it: as for the reader's
  // depths, X is not nested, so P keeps all of its time.
  EXPECT_EQ(SelfTimesOf({S(0, 100), S(50, 100)}),
            (std::vector<int64_t>{100, 100}));
}

TEST(SelfTimes, EmptyChildAtTheParentEndAndIdenticalSlices) {
  // Closed intervals: an empty slice at P's end is P's child, covering
  // nothing.
  EXPECT_EQ(SelfTimesOf({S(0, 100), S(100, 0)}),
            (std::vector<int64_t>{100, 0}));
  // Two slices with the same bounds nest: the outer one has no self time.
  EXPECT_EQ(SelfTimesOf({S(0, 100), S(0, 100)}),
            (std::vector<int64_t>{0, 100}));
}

TEST(SelfTimes, DeepNestingAndReturnToOuterLevels) {
  // A chain 5 deep, each 10 ns shorter on both sides, then a sibling of the
  // outermost.
  std::vector<Slice> slices;
  for (int d = 0; d < 5; ++d) slices.push_back(S(d * 10, 100 - d * 20));
  slices.push_back(S(200, 7));
  EXPECT_EQ(SelfTimesOf(slices), (std::vector<int64_t>{20, 20, 20, 20, 20, 7}));
}

TEST(NameStatsTable, AggregatesByNameAcrossTracksAndFiles) {
  NameStatsTable table;
  // File 1: id 1 = "step", id 2 = "op".
  const std::map<uint32_t, std::string> file1 = {{1, "step"}, {2, "op"}};
  std::vector<Slice> track1 = {S(0, 100, 1), S(10, 30, 2), S(50, 20, 2)};
  std::sort(track1.begin(), track1.end(), SliceOrder);
  table.AddTrack(track1,
                 [&](uint32_t id) -> std::string_view { return file1.at(id); });
  // File 2 numbers its strings differently: id 7 = "op", id 9 = "step".
  const std::map<uint32_t, std::string> file2 = {{7, "op"}, {9, "step"}};
  std::vector<Slice> track2 = {S(0, 60, 9), S(0, 41, 7)};
  std::sort(track2.begin(), track2.end(), SliceOrder);
  table.AddTrack(track2,
                 [&](uint32_t id) -> std::string_view { return file2.at(id); });

  ASSERT_EQ(table.size(), 2u);
  const std::vector<SliceNameStats> top = table.Top(0);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].name, "step");
  EXPECT_EQ(top[0].count, 2u);
  EXPECT_EQ(top[0].total_ns, 160);
  EXPECT_EQ(top[0].self_ns, (100 - 50) + (60 - 41));
  EXPECT_EQ(top[0].max_ns, 100);
  EXPECT_EQ(top[0].mean_ns(), 80);
  EXPECT_EQ(top[1].name, "op");
  EXPECT_EQ(top[1].count, 3u);
  EXPECT_EQ(top[1].total_ns, 91);
  EXPECT_EQ(top[1].self_ns, 91);
  EXPECT_EQ(top[1].max_ns, 41);
  EXPECT_EQ(top[1].mean_ns(), 30);  // 30.33 rounded
}

TEST(NameStatsTable, TopIsOrderedByTotalThenNameAndLimited) {
  NameStatsTable table;
  const std::map<uint32_t, std::string> names = {
      {1, "b"}, {2, "a"}, {3, "c"}, {4, "d"}};
  // Disjoint slices: b and a tie at 50, c 70, d 10.
  std::vector<Slice> slices = {S(0, 50, 1), S(100, 50, 2), S(200, 70, 3),
                               S(300, 10, 4)};
  table.AddTrack(slices,
                 [&](uint32_t id) -> std::string_view { return names.at(id); });
  std::vector<std::string> order;
  for (const auto& s : table.Top(3)) order.push_back(s.name);
  EXPECT_EQ(order, (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_EQ(table.Top(0).size(), 4u);
  EXPECT_EQ(table.Top(100).size(), 4u);
}

TEST(NameStatsTable, RecursiveNamesCountEveryLevel) {
  NameStatsTable table;
  std::vector<Slice> slices = {S(0, 100, 1), S(10, 50, 1)};
  table.AddTrack(slices, [](uint32_t) -> std::string_view { return "f"; });
  const auto top = table.Top(0);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].total_ns, 150);
  // Self time never double counts: it adds up to the time covered.
  EXPECT_EQ(top[0].self_ns, 100);
}

class SummarizeCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("summarize");
    testing::WriteCapture(dir_ / "capture");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SummarizeCapture, CountsEverythingOfTheKnownCapture) {
  auto summary = SummarizePath((dir_ / "capture").string());
  ASSERT_TRUE(summary.ok()) << summary.status();
  using C = testing::Capture;
  ASSERT_EQ(summary->processes.size(), 2u);
  EXPECT_TRUE(summary->unreadable.empty());
  ASSERT_EQ(summary->hosts.size(), 2u);
  EXPECT_EQ(summary->hosts[0].name, "host-a");
  EXPECT_EQ(summary->total_events, C::kEventsA + C::kEventsB);
  EXPECT_EQ(summary->total_dropped, 12u);

  const ProcessSummary& a = summary->processes[0];
  EXPECT_EQ(a.host, "host-a");
  EXPECT_EQ(a.pid, 100);
  EXPECT_EQ(a.process_index, 0);
  EXPECT_EQ(a.process_count, 2);
  EXPECT_EQ(a.session_id, "s1");
  EXPECT_EQ(a.command_line,
            (std::vector<std::string>{"train", "--steps", "3"}));
  EXPECT_FALSE(a.recovered());
  ASSERT_EQ(a.tracks.size(), 3u);
  EXPECT_EQ(a.tracks[0].name, "main");
  EXPECT_EQ(a.tracks[0].kind, trace_format::proto::TRACK_KIND_THREAD);
  EXPECT_EQ(a.tracks[0].slices, 12u);
  EXPECT_EQ(a.tracks[0].instants, 3u);
  EXPECT_EQ(a.tracks[0].dropped, 7u);
  EXPECT_EQ(a.tracks[1].kind, trace_format::proto::TRACK_KIND_DEVICE_STREAM);
  EXPECT_EQ(a.tracks[1].slices, 3u);
  EXPECT_EQ(a.tracks[2].counters, 5u);
  EXPECT_EQ(a.events, C::kEventsA);

  EXPECT_TRUE(summary->clocks.aligned());
  EXPECT_EQ(summary->clocks.references, (std::vector<std::string>{"client"}));
  EXPECT_EQ(summary->first_ns, C::kAlignedFirst);
  EXPECT_EQ(summary->last_ns, C::kAlignedLast);
  EXPECT_EQ(summary->processes[1].first_ns, 1'020'000);
  EXPECT_EQ(summary->processes[1].last_ns, 3'820'000);
  ASSERT_TRUE(summary->first_realtime_ns.has_value());
  EXPECT_EQ(*summary->first_realtime_ns, C::kRealtimeBase + C::kAlignedFirst);

  ASSERT_EQ(summary->top_names.size(), 5u);
  EXPECT_EQ(summary->distinct_names, 5u);
  const SliceNameStats& step = summary->top_names[0];
  EXPECT_EQ(step.name, "step");
  EXPECT_EQ(step.count, 6u);
  EXPECT_EQ(step.total_ns, C::kStepTotal);
  EXPECT_EQ(step.self_ns, C::kStepSelf);
  EXPECT_EQ(step.max_ns, 900'000);
  EXPECT_EQ(step.mean_ns(), 850'000);
  // Equal totals are ordered by name.
  EXPECT_EQ(summary->top_names[1].name, "backward");
  EXPECT_EQ(summary->top_names[2].name, "forward");
  // forward's children were flushed in an earlier chunk than forward
  // itself in step 2; self time is still computed on the merged track.
  EXPECT_EQ(summary->top_names[2].self_ns, 3 * 200'000);
  EXPECT_EQ(summary->top_names[3].name, "matmul");
  EXPECT_EQ(summary->top_names[4].name, "kernel");
  EXPECT_EQ(summary->top_names[4].total_ns, 150'000);
}

TEST_F(SummarizeCapture, WithoutAlignmentTimesStayOnEachHostsClock) {
  SummaryOptions options;
  options.align_clocks = false;
  options.top_names = 2;
  size_t progress_calls = 0;
  options.progress = [&](size_t done, size_t total) {
    ++progress_calls;
    EXPECT_EQ(total, 2u);
    EXPECT_LE(done, total);
  };
  auto summary = SummarizePath((dir_ / "capture").string(), options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_FALSE(summary->clocks.aligned());
  EXPECT_EQ(summary->first_ns, testing::Capture::kAlignedFirst);
  EXPECT_EQ(summary->last_ns, testing::Capture::kLocalLast);
  EXPECT_EQ(summary->top_names.size(), 2u);
  EXPECT_EQ(progress_calls, 2u);
}

TEST_F(SummarizeCapture, ReportsUnreadableAndRecoveredFilesBesideTheRest) {
  testing::WriteGarbage(dir_ / "capture" / "junk.podtrace");
  testing::WriteTorn(dir_ / "capture" / "host-c.300.podtrace");
  auto summary = SummarizePath((dir_ / "capture").string());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->unreadable.size(), 1u);
  EXPECT_NE(summary->unreadable[0].path.find("junk.podtrace"),
            std::string::npos);
  ASSERT_EQ(summary->processes.size(), 3u);
  const ProcessSummary& c = summary->processes[2];
  EXPECT_EQ(c.host, "host-c");
  EXPECT_TRUE(c.recovered());
  EXPECT_EQ(c.events, 30u);
  EXPECT_EQ(c.recovery.skipped_bytes(), 7u);
}

TEST_F(SummarizeCapture, ChunkDamageFoundWhileReadingMakesAFileRecovered) {
  // The file is closed, so its index is trusted when it is opened; the bad
  // chunk is only found when it is decoded.
  const testing::ChunkedFile info =
      testing::WriteCorrupted(dir_ / "host-c.300.podtrace");
  auto summary = SummarizePath((dir_ / "host-c.300.podtrace").string());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->processes.size(), 1u);
  const ProcessSummary& c = summary->processes[0];
  EXPECT_TRUE(c.recovered());
  EXPECT_TRUE(c.recovery.has_index);
  EXPECT_EQ(c.events, 30u);
  ASSERT_EQ(c.recovery.skipped.size(), 1u);
  EXPECT_EQ(c.recovery.skipped[0].offset, info.chunk_offset[2]);
  ASSERT_EQ(summary->top_names.size(), 1u);
  EXPECT_EQ(summary->top_names[0].count, 30u);
  EXPECT_EQ(summary->top_names[0].total_ns, 30'000);
}

// A trace file with a "main" thread track and a "device 0 stream".
struct RankFile {
  explicit RankFile(const std::filesystem::path& file) {
    auto created = trace_format::TraceWriter::Create(file.string());
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return;
    writer = std::move(*created);
    trace_format::proto::Track thread;
    thread.set_kind(trace_format::proto::TRACK_KIND_THREAD);
    thread.set_name("main");
    main = writer->AddTrack(thread);
    trace_format::proto::Track stream;
    stream.set_kind(trace_format::proto::TRACK_KIND_DEVICE_STREAM);
    stream.set_name("device 0 stream");
    device = writer->AddTrack(stream);
  }
  std::unique_ptr<trace_format::TraceWriter> writer;
  uint32_t main = 0;
  uint32_t device = 0;
};

// Two ranks of a job: each runs train_step scopes (with a nested
// train_step_data_prep, which is not a step of its own) and all-reduces on
// its device stream with the wait the runtime records. Rank 1 is slower
// every step, so rank 0 waits for it.
void WriteRank(const std::filesystem::path& file, int rank,
               const std::vector<int64_t>& steps,
               const std::vector<int64_t>& waits) {
  RankFile f(file);
  ASSERT_NE(f.writer, nullptr);
  trace_format::TraceWriter& w = *f.writer;
  trace_format::proto::Metadata m;
  m.set_host(rank == 0 ? "node-a" : "node-b");
  m.set_pid(1000 + rank);
  m.set_process_index(rank);
  m.set_process_count(2);
  w.SetMetadata(m);
  const uint32_t main = f.main, device = f.device;
  const uint32_t step = w.InternString("train_step");
  const uint32_t prep = w.InternString("train_step_data_prep");
  const uint32_t lazy = w.InternString("device 0 lazy step");
  const uint32_t all_reduce = w.InternString("all_reduce");
  const uint32_t wait_key = w.InternString("wait_ns");
  const uint32_t bytes_key = w.InternString("bytes");
  int64_t t = 1'000'000;
  for (size_t k = 0; k < steps.size(); ++k) {
    w.AddSlice(main, t + 10, steps[k] / 4, prep);
    w.AddSlice(main, t, steps[k], step);
    w.AddSlice(device, t + 100, steps[k] / 2, lazy);
    const trace_format::Arg args[] = {{bytes_key, int64_t{4096}},
                                      {wait_key, waits[k]}};
    w.AddSlice(device, t + steps[k] / 2, waits[k] + 1'000, all_reduce, args);
    t += 10'000'000;
  }
  ASSERT_TRUE(w.Close().ok());
}

TEST(SummarizeRanks, StepsCollectiveWaitAndTheStraggler) {
  const std::filesystem::path dir = testing::MakeTempDir("summary_ranks");
  WriteRank(dir / "node-a.1000.podtrace", 0, {2'000'000, 2'100'000, 1'900'000},
            {500'000, 600'000, 400'000});
  WriteRank(dir / "node-b.1001.podtrace", 1, {2'600'000, 2'700'000, 2'500'000},
            {1'000, 2'000, 3'000});
  auto summary = SummarizePath(dir.string());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->processes.size(), 2u);
  const RankActivity& a = summary->processes[0].activity;
  const RankActivity& b = summary->processes[1].activity;
  EXPECT_EQ(a.steps, 3u);
  EXPECT_EQ(a.step_median_ns, 2'000'000);
  EXPECT_EQ(a.step_max_ns, 2'100'000);
  EXPECT_EQ(a.step_total_ns, 6'000'000);
  EXPECT_EQ(a.collectives, 3u);
  EXPECT_EQ(a.collective_wait_ns, 1'500'000);
  EXPECT_EQ(a.collective_ns, 1'500'000 + 3'000);
  EXPECT_EQ(b.steps, 3u);
  EXPECT_EQ(b.step_median_ns, 2'600'000);
  EXPECT_EQ(b.collective_wait_ns, 6'000);
  // Rank 1 reaches every all-reduce 300 µs after rank 0: the verdict
  // of viewer/core names it.
  EXPECT_EQ(summary->straggler_rank, 1);
  EXPECT_THAT(summary->verdict,
              ::testing::StartsWith("rank 1 is the straggler: the others "
                                    "waited 900 µs for it"));
  std::filesystem::remove_all(dir);
}

// An asynchronous runtime: the host's step scope ends once the step is
// dispatched (50 us), while the device runs each step's 3 ms of kernels
// after it. A step lasts until its device work ends, and starts no earlier
// than the previous step's end.
TEST(SummarizeRanks, AsynchronousStepsLastUntilTheirDeviceWorkEnds) {
  const std::filesystem::path dir = testing::MakeTempDir("summary_async");
  const std::filesystem::path file = dir / "node-a.1000.podtrace";
  {
    RankFile f(file);
    ASSERT_NE(f.writer, nullptr);
    trace_format::TraceWriter& w = *f.writer;
    const uint32_t main = f.main, device = f.device;
    const uint32_t step = w.InternString("train_step");
    const uint32_t execute = w.InternString("Execute");
    const uint32_t conv = w.InternString("conv2d");
    const uint32_t dot = w.InternString("dot");
    const int64_t t0 = 1'000'000;
    int64_t device_at = t0 + 30'000;
    for (int k = 0; k < 3; ++k) {
      const int64_t t = t0 + k * 100'000;
      w.AddSlice(main, t, 50'000, step);
      const auto launch = w.AddSlice(main, t + 10'000, 10'000, execute);
      w.AddFlow(launch, k + 1, trace_format::FlowPhase::kBegin);
      const auto first = w.AddSlice(device, device_at, 1'000'000, conv);
      w.AddFlow(first, k + 1, trace_format::FlowPhase::kEnd);
      w.AddSlice(device, device_at + 1'000'000, 2'000'000, dot);
      device_at += 3'000'000;
    }
    ASSERT_TRUE(w.Close().ok());
  }
  auto summary = SummarizePath(file.string());
  ASSERT_TRUE(summary.ok()) << summary.status();
  const RankActivity& a = summary->processes[0].activity;
  EXPECT_EQ(a.steps, 3u);
  // Step 0 runs from its start to the end of its device work; steps 1 and 2
  // from the previous step's end to the end of theirs.
  EXPECT_EQ(a.step_max_ns, 3'030'000);
  EXPECT_EQ(a.step_median_ns, 3'000'000);
  EXPECT_EQ(a.step_total_ns, 9'030'000);
  std::filesystem::remove_all(dir);
}

TEST(SummarizeRanks, NoStragglerWithoutCollectivesOrAlone) {
  const std::filesystem::path dir = testing::MakeTempDir("summary_one_rank");
  testing::WriteCapture(dir);
  // Two processes of one job with steps: the fixture's host-a (900 us
  // steps) is slower than host-b (800 us).
  auto both = SummarizePath(dir.string());
  ASSERT_TRUE(both.ok()) << both.status();
  // Without collectives no rank made another wait: slower steps alone
  // name no straggler (the Ranks table shows them).
  EXPECT_EQ(both->straggler_rank, -1);
  EXPECT_EQ(both->verdict,
            "No collectives joined across ranks: no straggler to name");
  // Alone, a rank is nobody's straggler.
  auto one = SummarizePath((dir / "host-a.100.podtrace").string());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->straggler_rank, -1);
  EXPECT_EQ(one->verdict, "");
  std::filesystem::remove_all(dir);
}

// A folder of two sessions of the same job: summary reads every file, but
// the analyses see one session at a time, so it states no verdict over
// both and says where to get one.
TEST(SummarizeRanks, SeveralSessionsGetNoVerdictButAPointer) {
  const std::filesystem::path dir = testing::MakeTempDir("summary_sessions");
  for (const char* session : {"run1", "run2"}) {
    std::filesystem::create_directories(dir / session);
    WriteRank(dir / session / "node-a.1000.podtrace", 0,
              {2'000'000, 2'100'000, 1'900'000}, {500'000, 600'000, 400'000});
    WriteRank(dir / session / "node-b.1001.podtrace", 1,
              {2'600'000, 2'700'000, 2'500'000}, {1'000, 2'000, 3'000});
  }
  auto summary = SummarizePath(dir.string());
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->processes.size(), 4u);
  EXPECT_EQ(summary->straggler_rank, -1);
  EXPECT_EQ(summary->verdict,
            "no verdict: the newest session holds 2 of the 4 processes "
            "summarised; run `podscope analyze` on one session folder");
  // One session folder gets its verdict.
  auto one = SummarizePath((dir / "run1").string());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->straggler_rank, 1);
  std::filesystem::remove_all(dir);
}

TEST(SummarizePath, MissingPathIsNotFound) {
  auto summary = SummarizePath("/nonexistent/podscope/capture");
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace podscope::tools
