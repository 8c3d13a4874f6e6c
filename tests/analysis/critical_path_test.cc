// The critical path of a step across ranks (viewer/core critical_path.h)
// on hand-built jobs whose answer is worked out by hand: a straggling
// loader on one rank, a slow op on the path against a slow scope off it,
// and a collective that waited for a late rank.
#include "podscope/viewer/critical_path.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pod_trace.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

using analysis_testing::FreshDir;
using analysis_testing::RankTrace;

// One step of `ranks` ranks starting at 1 ms: on each rank's main thread
// `loader_next` for loader_us(rank), then `launch` (50 µs) whose flow
// starts `conv2d` (compute_us(rank)) on the device stream, then an
// all_reduce (collective_id world#0) on the stream that ends 200 µs after
// the last arrival. The step slice runs to the end of the all_reduce.
// Rank 0 also has a `logger` thread busy with `log_metrics` for
// logger_us, off every dependency.
std::string WriteStep(const std::string& name, int ranks,
                      const std::vector<int64_t>& loader_us,
                      const std::vector<int64_t>& compute_us,
                      int64_t logger_us = 0) {
  const std::string dir = FreshDir(name);
  std::vector<int64_t> arrive(ranks);
  for (int r = 0; r < ranks; ++r) {
    arrive[r] = 1'000'000 + (loader_us[r] + 50 + compute_us[r]) * 1000;
  }
  const int64_t end = *std::max_element(arrive.begin(), arrive.end()) + 200'000;
  for (int r = 0; r < ranks; ++r) {
    auto t = RankTrace::Create(dir + "/rank" + std::to_string(r) + ".podtrace",
                               "host" + std::to_string(r), r, ranks);
    if (!t.ok()) return "";
    RankTrace& x = **t;
    const uint32_t main = x.Thread("main");
    const uint32_t dev = x.Device("device 0 stream", 0);
    int64_t at = 1'000'000;
    x.Slice(main, at, end - at, "train_step", {{"step", int64_t{0}}});
    x.Slice(main, at, loader_us[r] * 1000, "loader_next");
    at += loader_us[r] * 1000;
    x.Slice(main, at, 50'000, "launch", {}, /*flow=*/100 + r,
            trace_format::FlowPhase::kBegin);
    at += 50'000;
    x.Slice(dev, at, compute_us[r] * 1000, "conv2d", {}, 100 + r,
            trace_format::FlowPhase::kEnd);
    x.Slice(
        dev, arrive[r], end - arrive[r], "all_reduce",
        {{"collective_id", "world#0"}, {"wait_ns", end - 200'000 - arrive[r]}});
    if (r == 0 && logger_us > 0) {
      const uint32_t logger = x.Thread("logger");
      x.Slice(logger, 1'000'000, logger_us * 1000, "log_metrics");
    }
    if (!x.Close().ok()) return "";
  }
  return dir;
}

struct Analysed {
  std::unique_ptr<TraceStore> store;
  StepBreakdown steps;
  StragglerReport stragglers;
  CriticalPath path;
};

Analysed Analyse(const std::string& dir) {
  Analysed a;
  auto store = TraceStore::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return a;
  a.store = std::move(*store);
  a.steps = AnalyzeSteps(*a.store);
  a.stragglers = AnalyzeStragglers(*a.store, a.steps);
  a.path = AnalyzeCriticalPath(*a.store, a.steps, a.stragglers, 0);
  return a;
}

std::string Describe(const CriticalPath& p) {
  std::string out;
  for (const PathSegment& s : p.segments) {
    out += "rank " + std::to_string(s.rank) + " " + s.name + " " +
           std::to_string(s.duration_ns()) + " " + s.note + "\n";
  }
  return out;
}

TEST(CriticalPath, AStragglingLoaderSetsTheStep) {
  // Rank 1 loads for 3 ms, rank 0 for 1 ms; both compute 2 ms.
  const Analysed a =
      Analyse(WriteStep("cp-loader", 2, {1000, 3000}, {2000, 2000}));
  const CriticalPath& p = a.path;
  ASSERT_FALSE(p.segments.empty());
  // The path: rank 1's loader, launch and conv2d, then the all-reduce's
  // transfer, which rank 0 waited in for rank 1.
  ASSERT_EQ(p.segments.size(), 4u) << Describe(p);
  EXPECT_EQ(p.segments[0].rank, 1);
  EXPECT_EQ(p.segments[0].name, "loader_next");
  EXPECT_EQ(p.segments[0].duration_ns(), 3'000'000);
  EXPECT_EQ(p.segments[1].name, "launch");
  EXPECT_EQ(p.segments[2].name, "conv2d");
  EXPECT_EQ(p.segments[2].rank, 1);
  EXPECT_EQ(p.segments[3].name, "all_reduce");
  EXPECT_EQ(p.segments[3].duration_ns(), 200'000);
  // The length of the path is the length of the step.
  EXPECT_EQ(p.length_ns(), p.end_ns - p.start_ns);
  EXPECT_EQ(p.length_ns(), 5'250'000);
  EXPECT_EQ(p.by_category[static_cast<int>(StepCategory::kDataLoading)],
            3'000'000);
  EXPECT_EQ(p.by_category[static_cast<int>(StepCategory::kCompute)], 2'000'000);
  ASSERT_EQ(p.by_rank.size(), 2u);
  EXPECT_GT(p.by_rank[1], 5'000'000);
}

TEST(CriticalPath, ACollectiveThatWaitedNamesTheLateRank) {
  // Three ranks; rank 2 computes 4 ms, the others 1 ms.
  const Analysed a =
      Analyse(WriteStep("cp-late", 3, {500, 500, 500}, {1000, 1000, 4000}));
  const CriticalPath& p = a.path;
  ASSERT_FALSE(p.segments.empty());
  const PathSegment& last = p.segments.back();
  EXPECT_EQ(last.name, "all_reduce");
  // The walk starts on the first rank whose all-reduce ends last (rank 0)
  // and goes on to rank 2, which arrived last.
  EXPECT_EQ(last.rank, 0);
  EXPECT_EQ(last.note, "waited for rank 2 in all_reduce world#0");
  EXPECT_EQ(last.duration_ns(), 200'000);
  bool slow_conv = false;
  for (const PathSegment& s : p.segments) {
    if (s.name == "conv2d") {
      EXPECT_EQ(s.rank, 2);
      slow_conv = s.duration_ns() == 4'000'000;
    }
  }
  EXPECT_TRUE(slow_conv) << Describe(p);
  EXPECT_EQ(p.length_ns(), p.end_ns - p.start_ns);
}

TEST(CriticalPath, ASlowScopeOffThePathIsNotOnIt) {
  // Rank 0's logger is busy 4 ms, longer than its loader and launch, but
  // nothing waits for it; the conv2d launched on rank 0 is on the path.
  const Analysed a =
      Analyse(WriteStep("cp-off", 1, {1000}, {2500}, /*logger_us=*/4000));
  const CriticalPath& p = a.path;
  ASSERT_FALSE(p.segments.empty());
  for (const PathSegment& s : p.segments) {
    EXPECT_NE(s.name, "log_metrics") << Describe(p);
  }
  ASSERT_EQ(p.segments.size(), 4u) << Describe(p);
  EXPECT_EQ(p.segments[2].name, "conv2d");
  EXPECT_EQ(p.segments[2].duration_ns(), 2'500'000);
  EXPECT_EQ(p.length_ns(), p.end_ns - p.start_ns);
}

TEST(CriticalPath, AnOpThatWaitedForItsLaunchGoesBackToTheHost) {
  // The device is idle until the launch: the path crosses from the stream
  // to the host thread at the launch, and the gap is not compute.
  const Analysed a = Analyse(WriteStep("cp-launch", 1, {2000}, {500}));
  const CriticalPath& p = a.path;
  ASSERT_GE(p.segments.size(), 3u) << Describe(p);
  EXPECT_EQ(p.segments[0].name, "loader_next");
  EXPECT_EQ(p.segments[0].track_name, "main");
  EXPECT_EQ(p.segments[1].name, "launch");
  EXPECT_EQ(p.by_category[static_cast<int>(StepCategory::kCompute)], 500'000);
  EXPECT_EQ(p.length_ns(), p.end_ns - p.start_ns);
}

WhatIfResult WhatIfOn(const Analysed& a, const std::string& spec) {
  auto change = ParseWhatIf(spec);
  EXPECT_TRUE(change.ok()) << change.status();
  if (!change.ok()) return {};
  return SimulateWhatIf(*a.store, a.steps, a.stragglers, 0, *change);
}

TEST(WhatIf, TheStragglersLoaderAtTheMedian) {
  // Loaders 1 ms and 3 ms: the median of the two is 2 ms; rank 1 then
  // arrives at 2 + 0.05 + 2 ms and the step ends 200 µs later.
  const Analysed a =
      Analyse(WriteStep("wi-loader", 2, {1000, 3000}, {2000, 2000}));
  const WhatIfResult r = WhatIfOn(a, "loader:1=median");
  EXPECT_EQ(r.step_ns, 5'250'000);
  EXPECT_EQ(r.modelled_ns, 5'250'000);
  EXPECT_EQ(r.changed_ns, 4'250'000);
  EXPECT_EQ(r.units_changed, 1u);
}

TEST(WhatIf, AFasterOpOnTheLateRank) {
  // conv2d 50 % faster everywhere: rank 2's 4 ms becomes 2 ms and it
  // still arrives last, at 0.55 + 2 ms.
  const Analysed a =
      Analyse(WriteStep("wi-op", 3, {500, 500, 500}, {1000, 1000, 4000}));
  WhatIfResult r = WhatIfOn(a, "op:conv2d=-50%");
  EXPECT_EQ(r.modelled_ns, r.step_ns);
  EXPECT_EQ(r.step_ns, 4'750'000);
  EXPECT_EQ(r.changed_ns, 2'750'000);
  EXPECT_EQ(r.units_changed, 3u);
  // Without waiting, the step still lasts as long as its slowest rank.
  r = WhatIfOn(a, "collectives=0");
  EXPECT_EQ(r.changed_ns, 4'750'000);
  // A name no slice has changes nothing.
  r = WhatIfOn(a, "op:nothing=-90%");
  EXPECT_EQ(r.changed_ns, r.step_ns);
  EXPECT_EQ(r.units_changed, 0u);
}

TEST(WhatIf, SpecsAreChecked) {
  for (const char* bad :
       {"op:conv2d", "op:conv2d=-20", "op:=-20%", "op:conv2d=-120%",
        "loader:x=median", "loader:1=fast", "faster"}) {
    EXPECT_FALSE(ParseWhatIf(bad).ok()) << bad;
  }
  auto w = ParseWhatIf("op:layer 1/conv=+25%");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->name, "layer 1/conv");
  EXPECT_DOUBLE_EQ(w->factor, 1.25);
}

}  // namespace
}  // namespace podscope::viewer
