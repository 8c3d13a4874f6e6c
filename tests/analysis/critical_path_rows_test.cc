// AnalyzeCriticalPaths (every step row at once, the collectives indexed
// once, rows spread over threads) against AnalyzeCriticalPath row by row,
// field by field, on generated multi-rank sessions: random loaders,
// launches flowing to device ops, collectives joined by collective_id
// and a busy side thread on some ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pod_trace.h"
#include "podscope/viewer/critical_path.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {
namespace {

using analysis_testing::FreshDir;
using analysis_testing::RankTrace;

struct Op {
  int64_t launch_at = 0, launch_ns = 0, start = 0, ns = 0;
};

// One rank's step: a loader, then launches whose flows start device ops.
struct RankPlan {
  int64_t loader_ns = 0;
  std::vector<Op> ops;
  int64_t arrive = 0;  // the all_reduce on the device stream
};

RankPlan Plan(std::mt19937& rng, int64_t at) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  RankPlan p;
  p.loader_ns = pick(10'000, 400'000);
  int64_t host = at + p.loader_ns, dev = host;
  const int n = static_cast<int>(pick(1, 5));
  for (int i = 0; i < n; ++i) {
    Op o;
    o.launch_at = host + pick(0, 20'000);
    o.launch_ns = pick(5'000, 60'000);
    host = o.launch_at + o.launch_ns;
    o.start = std::max(dev, host) + pick(0, 30'000);
    o.ns = pick(10'000, 300'000);
    dev = o.start + o.ns;
    p.ops.push_back(o);
  }
  p.arrive = std::max(dev, host) + pick(0, 50'000);
  return p;
}

// `ranks` ranks, `steps` steps; returns the session folder.
std::string WriteSession(const std::string& name, int ranks, int steps,
                         uint32_t seed) {
  const std::string dir = FreshDir(name);
  std::mt19937 rng(seed);
  std::vector<std::unique_ptr<RankTrace>> out;
  std::vector<uint32_t> main, dev, side;
  for (int r = 0; r < ranks; ++r) {
    auto t = RankTrace::Create(dir + "/rank" + std::to_string(r) + ".podtrace",
                               "host" + std::to_string(r), r, ranks);
    if (!t.ok()) return "";
    out.push_back(std::move(*t));
    main.push_back(out[r]->Thread("main"));
    dev.push_back(out[r]->Device("device 0 stream", 0));
    side.push_back(r % 2 == 0 ? out[r]->Thread("logger") : 0);
  }
  uint64_t flow = 1;
  int64_t at = 1'000'000;
  for (int s = 0; s < steps; ++s) {
    std::vector<RankPlan> plans;
    int64_t last = 0;
    for (int r = 0; r < ranks; ++r) {
      plans.push_back(Plan(rng, at));
      last = std::max(last, plans.back().arrive);
    }
    const int64_t end = last + 100'000;
    const std::string id = "world#" + std::to_string(s);
    for (int r = 0; r < ranks; ++r) {
      RankTrace& x = *out[r];
      const RankPlan& p = plans[r];
      x.Slice(main[r], at, end - at, "train_step", {{"step", int64_t{s}}});
      x.Slice(main[r], at, p.loader_ns, "loader_next");
      for (const Op& o : p.ops) {
        x.Slice(main[r], o.launch_at, o.launch_ns, "launch", {}, flow,
                trace_format::FlowPhase::kBegin);
        x.Slice(dev[r], o.start, o.ns, (flow % 3) ? "conv2d" : "matmul", {},
                flow, trace_format::FlowPhase::kEnd);
        ++flow;
      }
      x.Slice(dev[r], p.arrive, end - p.arrive, "all_reduce",
              {{"collective_id", id}, {"wait_ns", last - p.arrive}});
      if (r % 2 == 0) x.Slice(side[r], at + 1'000, (end - at) / 2, "log");
    }
    at = end + std::uniform_int_distribution<int64_t>(0, 80'000)(rng);
  }
  for (auto& x : out) {
    if (!x->Close().ok()) return "";
  }
  return dir;
}

void ExpectSame(const CriticalPath& got, const CriticalPath& want) {
  EXPECT_EQ(got.row, want.row);
  EXPECT_EQ(got.step, want.step);
  EXPECT_EQ(got.start_ns, want.start_ns);
  EXPECT_EQ(got.end_ns, want.end_ns);
  EXPECT_EQ(got.by_category, want.by_category);
  EXPECT_EQ(got.by_rank, want.by_rank);
  ASSERT_EQ(got.segments.size(), want.segments.size()) << "row " << want.row;
  for (size_t i = 0; i < want.segments.size(); ++i) {
    const PathSegment& a = got.segments[i];
    const PathSegment& b = want.segments[i];
    SCOPED_TRACE("row " + std::to_string(want.row) + " segment " +
                 std::to_string(i));
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(a.track, b.track);
    EXPECT_EQ(a.track_name, b.track_name);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.category, b.category);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.has_event, b.has_event);
    EXPECT_EQ(a.event.track, b.event.track);
    EXPECT_EQ(a.event.kind, b.event.kind);
    EXPECT_EQ(a.event.index, b.event.index);
    EXPECT_EQ(a.note, b.note);
  }
}

TEST(CriticalPaths, EveryRowAtOnceEqualsEachRowAlone) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int ranks = 2 + static_cast<int>(seed % 3) * 2;
    const std::string dir =
        WriteSession("cp-rows-" + std::to_string(seed), ranks, 12, seed);
    ASSERT_FALSE(dir.empty());
    auto store = TraceStore::Open(dir);
    ASSERT_TRUE(store.ok()) << store.status();
    const StepBreakdown steps = AnalyzeSteps(**store);
    const StragglerReport stragglers = AnalyzeStragglers(**store, steps);
    ASSERT_EQ(steps.rows.size(), 12u);
    ASSERT_EQ(stragglers.collectives.size(), 12u);
    size_t waits = 0;
    for (int threads : {1, 2, 3}) {
      const std::vector<CriticalPath> all =
          AnalyzeCriticalPaths(**store, steps, stragglers, threads);
      ASSERT_EQ(all.size(), steps.rows.size());
      for (size_t row = 0; row < all.size(); ++row) {
        const CriticalPath one = AnalyzeCriticalPath(**store, steps, stragglers,
                                                     static_cast<int>(row));
        ASSERT_FALSE(one.segments.empty());
        ExpectSame(all[row], one);
        for (const PathSegment& s : one.segments) {
          waits += s.note.rfind("waited for rank", 0) == 0;
        }
      }
    }
    // The sessions exercise the cross-rank part of the walk.
    EXPECT_GT(waits, 0u);
  }
}

}  // namespace
}  // namespace podscope::viewer
