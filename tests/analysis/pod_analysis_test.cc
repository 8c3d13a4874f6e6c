// The pod analyses (viewer/core pod_analysis.h) on traces written with the
// real TraceWriter, with answers computed by hand, and on shared Kineto
// traces.
#include "podscope/viewer/pod_analysis.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pod_trace.h"

namespace podscope::viewer {
namespace {

namespace fs = std::filesystem;
using analysis_testing::Args;
using analysis_testing::FreshDir;
using analysis_testing::RankTrace;
using ::testing::Contains;
using ::testing::ElementsAre;

std::unique_ptr<TraceStore> OpenStore(const std::string& dir) {
  auto s = TraceStore::Open(dir);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::unique_ptr<RankTrace> NewRank(
    const std::string& dir, int rank, int ranks,
    std::map<std::string, std::string> attrs = {}) {
  auto t = RankTrace::Create(dir + "/rank" + std::to_string(rank) + ".podtrace",
                             "host" + std::to_string(rank), rank, ranks, attrs);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

TEST(PodAnalysisTest, RankThatIsAlwaysLateIsNamedWithEvidence) {
  const std::string dir = analysis_testing::WriteStragglerSession("straggler");
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const PodAnalysis a = AnalyzePod(*store);
  ASSERT_EQ(a.steps.ranks.size(), 3u);
  ASSERT_EQ(a.steps.rows.size(), 4u);
  EXPECT_TRUE(a.steps.matched_by_number);

  const StragglerReport& s = a.stragglers;
  ASSERT_EQ(s.collectives.size(), 4u);
  EXPECT_EQ(s.joined_by_id, 4u);
  for (size_t k = 0; k < 4; ++k) {
    const JoinedCollective& j = s.collectives[k];
    EXPECT_EQ(j.key, "grads#" + std::to_string(k));
    EXPECT_EQ(j.arrivals.size(), 3u);
    EXPECT_EQ(j.last_rank, 2);
    EXPECT_EQ(j.late_by_ns, 200'000);
    EXPECT_EQ(j.wait_caused_ns, 400'000);
    EXPECT_EQ(a.steps.rows[j.step_row].step, static_cast<int64_t>(k));
  }
  EXPECT_EQ(s.ranks[2].last_count, 4u);
  EXPECT_EQ(s.ranks[2].wait_caused_ns, 1'600'000);
  EXPECT_EQ(s.ranks[0].last_count, 0u);
  EXPECT_EQ(s.ranks[0].waited_ns, 4 * 200'000);
  ASSERT_TRUE(s.straggler.has_value());
  const Straggler& g = *s.straggler;
  EXPECT_EQ(g.rank, 2);
  EXPECT_EQ(g.last_count, 4u);
  EXPECT_EQ(g.joined, 4u);
  EXPECT_EQ(g.wait_caused_ns, 1'600'000);
  EXPECT_THAT(g.steps, ElementsAre(0, 1, 2, 3));
  ASSERT_EQ(g.collectives.size(), 1u);
  EXPECT_EQ(g.collectives[0].first, "AllReduce");
  EXPECT_EQ(g.collectives[0].second, 4u);
  ASSERT_EQ(g.longer_scopes.size(), 1u);
  EXPECT_EQ(g.longer_scopes[0].name, "forward");
  EXPECT_THAT(g.longer_scopes[0].steps, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(g.longer_scopes[0].own_ns, 4 * 500'000);
  EXPECT_EQ(g.longer_scopes[0].others_median_ns, 4 * 300'000);

  // Rank 2 is also the slowest in no step (all steps are 900 µs), but
  // waits least: its collective wait is 0 and the others' 200 µs a step.
  EXPECT_EQ(a.steps.totals[2]
                .category_ns[static_cast<int>(StepCategory::kCollectiveWait)],
            0);
  EXPECT_EQ(a.steps.totals[0]
                .category_ns[static_cast<int>(StepCategory::kCollectiveWait)],
            4 * 200'000);
}

TEST(PodAnalysisTest, NoStragglerWhenArrivalsTie) {
  const std::string dir = FreshDir("tie");
  for (int r = 0; r < 2; ++r) {
    auto t = NewRank(dir, r, 2);
    const uint32_t dev = t->Device("device 0 (CPU) stream", r);
    for (int k = 0; k < 3; ++k) {
      t->Slice(dev, k * 1000, 500, "AllReduce");  // joined by order
    }
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const PodAnalysis a = AnalyzePod(*store);
  EXPECT_EQ(a.stragglers.joined_by_order, 3u);
  EXPECT_EQ(a.stragglers.collectives[0].key, "AllReduce#0");
  EXPECT_EQ(a.stragglers.collectives[0].last_rank, -1);
  EXPECT_FALSE(a.stragglers.straggler.has_value());
}

// Two ranks that each arrive last about half the time are not stragglers,
// even when one of them is last a little more often (11 of 20, what chance
// gives often); one that is last in 17 of 20 is.
TEST(PodAnalysisTest, BeingLastAsOftenAsChanceGivesNamesNoStraggler) {
  for (const int late_count : {11, 17}) {
    const std::string dir = FreshDir("chance" + std::to_string(late_count));
    for (int r = 0; r < 2; ++r) {
      auto t = NewRank(dir, r, 2);
      const uint32_t dev = t->Device("device 0 (CPU) stream", r);
      for (int k = 0; k < 20; ++k) {
        // Rank 0 is late in the first `late_count` collectives, rank 1 in
        // the others.
        const bool late = (r == 0) == (k < late_count);
        t->Slice(dev, k * 1000 + (late ? 100 : 0), 500, "AllReduce");
      }
      ASSERT_TRUE(t->Close().ok());
    }
    auto store = OpenStore(dir);
    ASSERT_NE(store, nullptr);
    const PodAnalysis a = AnalyzePod(*store);
    ASSERT_EQ(a.stragglers.collectives.size(), 20u);
    EXPECT_EQ(a.stragglers.ranks[0].last_count,
              static_cast<uint64_t>(late_count));
    if (late_count == 11) {
      EXPECT_FALSE(a.stragglers.straggler.has_value());
    } else {
      ASSERT_TRUE(a.stragglers.straggler.has_value());
      EXPECT_EQ(a.stragglers.straggler->rank, 0);
    }
  }
}

// One step whose every category is known (see the comments for the
// intervals).
TEST(PodAnalysisTest, StepCategoriesAreExclusiveAndSumToTheStep) {
  const std::string dir = FreshDir("categories");
  {
    auto t = NewRank(dir, 0, 1);
    const uint32_t main = t->Thread("main");
    const uint32_t loader = t->Thread("loader 0");
    const uint32_t dev = t->Device("device 0 (CPU) stream", 0);
    const uint32_t dev2 = t->Device("device 0 (CPU) stream 1", 0, 1);
    t->Slice(main, -100, 2'000'000, "main");  // encloses the step: not host
    t->Slice(main, 0, 1'000'000, "train_step", {{"step", int64_t{1}}});
    t->Slice(main, 0, 100'000, "prepare");                // host [0, 100k)
    t->Slice(main, 100'000, 200'000, "dispatch");         // host [100k, 300k)
    t->Slice(loader, 50'000, 100'000, "loader_prepare");  // [50k, 150k)
    t->Slice(dev, 200'000, 300'000, "conv/conv2d");       // [200k, 500k)
    // Waits [600k, 700k), transfers [700k, 900k).
    t->Slice(dev, 600'000, 300'000, "AllReduce",
             {{"wait_ns", int64_t{100'000}}});
    // On a second stream, a kernel inside the transfer: compute wins.
    t->Slice(dev2, 850'000, 30'000, "grad/fusion");
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const StepBreakdown s = AnalyzeSteps(*store);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].step, 1);
  const StepCell& c = s.rows[0].ranks[0];
  ASSERT_TRUE(c.present);
  EXPECT_EQ(c.duration_ns, 1'000'000);
  EXPECT_EQ(c.category(StepCategory::kCompute), 330'000);
  EXPECT_EQ(c.category(StepCategory::kCollectiveTransfer), 170'000);
  EXPECT_EQ(c.category(StepCategory::kCollectiveWait), 100'000);
  EXPECT_EQ(c.category(StepCategory::kDataLoading), 100'000);
  EXPECT_EQ(c.category(StepCategory::kHost), 100'000);
  EXPECT_EQ(c.category(StepCategory::kIdle), 200'000);

  // Overlap: of the collective's 300 µs, 30 µs ran beside compute.
  const TopWork w = AnalyzeTopWork(*store, s);
  ASSERT_EQ(w.overlap.size(), 1u);
  EXPECT_EQ(w.overlap[0].collective_ns, 300'000);
  EXPECT_EQ(w.overlap[0].overlapped_ns, 30'000);
  // Top work: the conv kernel's self time, 30% of the step.
  auto conv =
      std::find_if(w.device_ops.begin(), w.device_ops.end(),
                   [](const WorkEntry& e) { return e.name == "conv/conv2d"; });
  ASSERT_NE(conv, w.device_ops.end());
  EXPECT_EQ(conv->device_id, 0);
  EXPECT_EQ(conv->self_ns, 300'000);
  EXPECT_DOUBLE_EQ(conv->step_share, 0.3);
}

TEST(PodAnalysisTest, AsynchronousStepsLastUntilTheDeviceFinishesThem) {
  // The host dispatches three steps in 10 us each (an asynchronous
  // runtime); each step's Execute launches an execution on the device
  // (a flow to its first kernel) that runs 1 ms behind the previous one.
  const std::string dir = FreshDir("async_steps");
  {
    auto t = NewRank(dir, 0, 1);
    const uint32_t main = t->Thread("main");
    const uint32_t dev = t->Device("device 0 (CPU) stream", 0);
    for (int k = 0; k < 3; ++k) {
      const int64_t host = k * 10'000;
      t->Slice(main, host, 10'000, "train_step", {{"step", int64_t{k}}});
      t->Slice(main, host + 1'000, 5'000, "Execute", {}, 100 + k);
      const int64_t device = 20'000 + k * 1'000'000;
      t->Slice(dev, device, 400'000, "conv/conv2d", {}, 100 + k,
               trace_format::FlowPhase::kEnd);
      t->Slice(dev, device + 400'000, 500'000, "fc/dot");
    }
    // A step whose launch reaches no device work stays its own slice.
    t->Slice(main, 5'000'000, 50'000, "train_step", {{"step", int64_t{3}}});
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const StepBreakdown s = AnalyzeSteps(*store);
  ASSERT_EQ(s.rows.size(), 4u);
  // Step 0: from its dispatch to its execution's end; steps 1 and 2: from
  // the previous step's end to their execution's end.
  const int64_t starts[] = {0, 920'000, 1'920'000, 5'000'000};
  const int64_t ends[] = {920'000, 1'920'000, 2'920'000, 5'050'000};
  for (int k = 0; k < 4; ++k) {
    const StepCell& c = s.rows[k].ranks[0];
    ASSERT_TRUE(c.present) << k;
    EXPECT_EQ(c.start_ns, starts[k]) << k;
    EXPECT_EQ(c.duration_ns, ends[k] - starts[k]) << k;
  }
  // Step 1's window is its device work: 900 us of compute, 100 us idle.
  EXPECT_EQ(s.rows[1].ranks[0].category(StepCategory::kCompute), 900'000);
  EXPECT_EQ(s.rows[1].ranks[0].category(StepCategory::kIdle), 100'000);
}

TEST(PodAnalysisTest, LateRecompileNamesTheChangedShapeAndTheStalledStep) {
  const std::string dir = FreshDir("recompile");
  {
    auto t = NewRank(dir, 0, 1);
    const uint32_t main = t->Thread("main");
    for (int64_t k = 0; k < 7; ++k) {
      t->Slice(main, k * 1'000'000, 900'000, "train_step", {{"step", k}});
    }
    const std::string sig = "f32[256,1,28,28] f32[32,1,3,3] i32[]";
    t->Slice(main, 10'000, 200'000, "Compile",
             {{"graph_hash", "a1"},
              {"cache_hit", int64_t{0}},
              {"signature", sig},
              {"graph_ops", int64_t{40}},
              {"step", int64_t{0}}});
    t->Slice(main, 300'000, 100'000, "Compile",
             {{"graph_hash", "c3"},
              {"cache_hit", int64_t{0}},
              {"signature", "f32[10] f32[10]"},
              {"graph_ops", int64_t{3}},
              {"step", int64_t{0}}});
    t->Slice(main, 1'010'000, 1'000, "Compile",
             {{"graph_hash", "a1"},
              {"cache_hit", int64_t{1}},
              {"signature", sig},
              {"step", int64_t{1}}});
    t->Slice(main, 5'010'000, 300'000, "Compile",
             {{"graph_hash", "b2"},
              {"cache_hit", int64_t{0}},
              {"signature", "f32[100,1,28,28] f32[32,1,3,3] i32[]"},
              {"graph_ops", int64_t{40}},
              {"step", int64_t{5}}});
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const StepBreakdown steps = AnalyzeSteps(*store);
  const CompileReport c = AnalyzeCompiles(*store, steps);
  ASSERT_EQ(c.compiles.size(), 4u);
  EXPECT_EQ(c.hits, 1u);
  EXPECT_EQ(c.misses, 3u);
  EXPECT_EQ(c.late_misses, 1u);
  EXPECT_EQ(c.miss_ns, 600'000);
  EXPECT_FALSE(c.compiles[0].late);
  EXPECT_FALSE(c.compiles[1].late);
  const CompileEvent& late = c.compiles[3];
  EXPECT_TRUE(late.late);
  EXPECT_EQ(late.step, 5);
  ASSERT_GE(late.step_row, 0);
  EXPECT_EQ(steps.rows[late.step_row].step, 5);
  EXPECT_EQ(late.stall_ns, 300'000);
  EXPECT_EQ(late.previous, 2);  // the hit of the same graph, the latest
  EXPECT_THAT(late.changes,
              ElementsAre("parameter 0 shape: f32[256,1,28,28] -> "
                          "f32[100,1,28,28]",
                          "graph_hash: a1 -> b2"));
}

TEST(PodAnalysisTest, MemoryPeakListsTheBuffersLiveAtIt) {
  const std::string dir = FreshDir("memory");
  {
    auto t = NewRank(dir, 0, 1);
    const uint32_t allocs = t->Device("device 0 allocations", 0, 2);
    auto alloc = [&](int64_t ts, int64_t id, int64_t bytes, int64_t in_use,
                     const std::string& op, const std::string& scope) {
      t->Instant(allocs, ts, "Allocate",
                 {{"buffer_id", id},
                  {"bytes", bytes},
                  {"in_use", in_use},
                  {"op", op},
                  {"scope", scope}});
    };
    auto release = [&](int64_t ts, int64_t id, int64_t bytes, int64_t in_use) {
      t->Instant(allocs, ts, "Free",
                 {{"buffer_id", id}, {"bytes", bytes}, {"in_use", in_use}});
    };
    alloc(10, 1, 100, 100, "dot", "model/fc1");
    alloc(20, 2, 300, 400, "conv2d", "model/conv");
    release(30, 1, 100, 300);
    alloc(40, 3, 50, 350, "fusion", "");
    alloc(50, 4, 500, 850, "parameter", "");
    release(60, 4, 500, 350);
    release(70, 2, 300, 50);
    const uint32_t counter = t->Counter("device 1 memory in use");
    t->CounterValue(counter, 5, 10);
    t->CounterValue(counter, 15, 70);
    t->CounterValue(counter, 25, 20);
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const std::vector<DeviceMemory> m = AnalyzeMemory(*store);
  ASSERT_EQ(m.size(), 2u);
  const DeviceMemory& d0 = m[0];
  EXPECT_EQ(d0.device_id, 0);
  EXPECT_TRUE(d0.from_allocations);
  EXPECT_EQ(d0.peak_bytes, 850);
  EXPECT_EQ(d0.peak_ns, 50);
  EXPECT_EQ(d0.allocations, 4u);
  EXPECT_EQ(d0.frees, 3u);
  EXPECT_EQ(d0.live_count, 3u);
  ASSERT_EQ(d0.live_at_peak.size(), 3u);
  EXPECT_EQ(d0.live_at_peak[0].buffer_id, 4);
  EXPECT_EQ(d0.live_at_peak[0].bytes, 500);
  EXPECT_EQ(d0.live_at_peak[0].op, "parameter");
  EXPECT_EQ(d0.live_at_peak[1].buffer_id, 2);
  EXPECT_EQ(d0.live_at_peak[1].op, "conv2d");
  EXPECT_EQ(d0.live_at_peak[1].scope, "model/conv");
  EXPECT_EQ(d0.live_at_peak[2].buffer_id, 3);
  EXPECT_EQ(d0.live_at_peak[2].bytes, 50);
  const DeviceMemory& d1 = m[1];
  EXPECT_EQ(d1.device_id, 1);
  EXPECT_FALSE(d1.from_allocations);
  EXPECT_EQ(d1.peak_bytes, 70);
  EXPECT_EQ(d1.peak_ns, 15);
}

TEST(PodAnalysisTest, RooflineAgainstTheHostsPeaks) {
  const std::string dir = FreshDir("roofline");
  {
    auto t = NewRank(dir, 0, 1,
                     {{"machine.peak_gflops", "100"},
                      {"machine.peak_gbps", "10"},
                      {"machine.peak_threads", "2"},
                      {"machine.peak_source", "measured"}});
    const uint32_t dev = t->Device("device 0 (CPU) stream", 0);
    for (int k = 0; k < 2; ++k) {
      t->Slice(dev, k * 1'000'000, 100'000, "dense/dot",
               {{"flops", int64_t{2'000'000}},
                {"bytes_accessed", int64_t{100'000}},
                {"op", "dot"}});
    }
    t->Slice(dev, 500'000, 10'000, "relu/fusion",
             {{"flops", int64_t{10'000}},
              {"bytes_accessed", int64_t{40'000}},
              {"op", "fusion"}});
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const OpProfile p = AnalyzeOps(*store);
  ASSERT_EQ(p.peaks.size(), 1u);
  EXPECT_DOUBLE_EQ(p.peaks[0].peak_gflops, 100);
  EXPECT_DOUBLE_EQ(p.peaks[0].peak_gbps, 10);
  EXPECT_EQ(p.peaks[0].source, "measured");
  EXPECT_EQ(p.peaks[0].threads, 2);
  ASSERT_EQ(p.by_kind.size(), 2u);
  const RooflineEntry& dot = p.by_kind[0];  // most time first
  EXPECT_EQ(dot.name, "dot");
  EXPECT_EQ(dot.count, 2u);
  EXPECT_EQ(dot.flops, 4'000'000);
  EXPECT_EQ(dot.bytes, 200'000);
  EXPECT_EQ(dot.time_ns, 200'000);
  EXPECT_DOUBLE_EQ(dot.gflops, 20);
  EXPECT_DOUBLE_EQ(dot.intensity, 20);
  EXPECT_DOUBLE_EQ(dot.bound_gflops, 100);  // compute roof
  EXPECT_FALSE(dot.memory_bound);
  EXPECT_DOUBLE_EQ(dot.fraction_of_bound, 0.2);
  const RooflineEntry& fusion = p.by_kind[1];
  EXPECT_EQ(fusion.name, "fusion");
  EXPECT_DOUBLE_EQ(fusion.gflops, 1);
  EXPECT_DOUBLE_EQ(fusion.intensity, 0.25);
  EXPECT_DOUBLE_EQ(fusion.bound_gflops, 2.5);  // memory roof
  EXPECT_TRUE(fusion.memory_bound);
  EXPECT_DOUBLE_EQ(fusion.fraction_of_bound, 0.4);
  ASSERT_EQ(p.by_name.size(), 2u);
  EXPECT_EQ(p.by_name[0].name, "dense/dot");
}

// A peak measured on a busy machine (10 GFLOP/s, 1 GB/s) below what the
// kernels reached (dot 20 GFLOP/s, the fusion 4 GB/s): the analysis says
// the peak is understated, uses the best achieved rates, and no op is
// above 100 % of its bound.
TEST(PodAnalysisTest, AnUnderstatedPeakIsRaisedAndSaidSo) {
  const std::string dir = analysis_testing::WriteLowPeakSession("low_peak");
  ASSERT_FALSE(dir.empty());
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  const OpProfile p = AnalyzeOps(*store);
  ASSERT_EQ(p.peaks.size(), 1u);
  const HostPeak& h = p.peaks[0];
  EXPECT_TRUE(h.understated);
  EXPECT_DOUBLE_EQ(h.recorded_gflops, 10);
  EXPECT_DOUBLE_EQ(h.recorded_gbps, 1);
  EXPECT_DOUBLE_EQ(h.peak_gflops, 20);
  EXPECT_DOUBLE_EQ(h.peak_gbps, 4);
  for (const RooflineEntry& e : p.by_name) {
    EXPECT_LE(e.fraction_of_bound, 1.0) << e.name;
  }
  EXPECT_DOUBLE_EQ(p.by_kind[0].fraction_of_bound, 1.0);  // the dot
}

// Arguments of the wrong type, missing arguments, negative durations and
// random shapes: the analyses finish and stay consistent.
TEST(PodAnalysisTest, OddTracesDoNotBreakTheAnalyses) {
  const std::string dir = FreshDir("odd");
  std::mt19937_64 rng(7);
  const std::vector<std::string> names = {
      "train_step", "AllReduce", "Compile",        "Allocate",
      "Free",       "step",      "loader_prepare", "x"};
  const std::vector<std::string> keys = {
      "step",       "wait_ns", "collective_id",  "cache_hit", "signature",
      "graph_hash", "flops",   "bytes_accessed", "op",        "buffer_id",
      "bytes",      "in_use",  "scope",          "graph_ops"};
  for (int r = 0; r < 3; ++r) {
    auto t =
        NewRank(dir, r, 3,
                {{"machine.peak_gflops", "nan"}, {"machine.peak_gbps", "-3"}});
    const uint32_t tracks[] = {t->Thread("main"), t->Thread("loader 0"),
                               t->Device("device 0 (CPU) stream", r),
                               t->Device("device 0 allocations", r, 2)};
    for (int i = 0; i < 400; ++i) {
      Args args;
      const int nargs = static_cast<int>(rng() % 4);
      for (int k = 0; k < nargs; ++k) {
        const std::string& key = keys[rng() % keys.size()];
        switch (rng() % 4) {
          case 0:
            args.emplace_back(key, static_cast<int64_t>(rng()));
            break;
          case 1:
            args.emplace_back(key, static_cast<int64_t>(rng() % 5) - 2);
            break;
          case 2:
            args.emplace_back(key, 2.5);
            break;
          default:
            args.emplace_back(
                key, std::string("f32[") + std::to_string(rng() % 9) + "] ]][");
        }
      }
      const uint32_t track = tracks[rng() % 4];
      const int64_t start = static_cast<int64_t>(rng() % 100000) - 500;
      const int64_t dur = static_cast<int64_t>(rng() % 20000) - 1000;
      const std::string& name = names[rng() % names.size()];
      if (rng() % 3 == 0) {
        t->Instant(track, start, name, args);
      } else {
        t->Slice(track, start, dur, name, args);
      }
    }
    ASSERT_TRUE(t->Close().ok());
  }
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  PodAnalysisOptions options;
  options.top = 0;
  const PodAnalysis a = AnalyzePod(*store, options);
  for (const StepRow& row : a.steps.rows) {
    for (const StepCell& c : row.ranks) {
      if (!c.present) continue;
      int64_t sum = 0;
      for (int64_t v : c.category_ns) {
        EXPECT_GE(v, 0);
        sum += v;
      }
      EXPECT_EQ(sum, c.duration_ns);
    }
  }
  for (const JoinedCollective& j : a.stragglers.collectives) {
    EXPECT_GE(j.arrivals.size(), 2u);
    EXPECT_GE(j.late_by_ns, 0);
  }
  for (const DeviceMemory& m : a.memory) EXPECT_GE(m.peak_bytes, 0);
  EXPECT_TRUE(a.ops.peaks.empty());  // nan and negative peaks are unknown
}

TEST(PodAnalysisTest, KinetoRanksGiveAStepTableOfTwoRanks) {
  const fs::path dir = FreshDir("kineto");
  fs::create_directories(dir / "job");
  const fs::path data = fs::path(PODSCOPE_SHARED_DATA) / "kineto";
  for (const char* name :
       {"sampled_rank-0.json.gz", "sampled_rank-1.json.gz"}) {
    fs::copy_file(data / name, dir / "job" / name);
  }
  setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  auto store = OpenStore((dir / "job").string());
  unsetenv("XDG_CACHE_HOME");
  ASSERT_NE(store, nullptr);
  const PodAnalysis a = AnalyzePod(*store);
  ASSERT_EQ(a.steps.ranks.size(), 2u);
  EXPECT_TRUE(a.steps.matched_by_number);
  ASSERT_EQ(a.steps.rows.size(), 2u);  // ProfilerStep#551 and #552
  EXPECT_EQ(a.steps.rows[0].step, 551);
  EXPECT_EQ(a.steps.rows[1].step, 552);
  for (const StepRow& row : a.steps.rows) {
    for (const StepCell& c : row.ranks) {
      ASSERT_TRUE(c.present);
      EXPECT_GT(c.duration_ns, 0);
      EXPECT_GT(c.category(StepCategory::kCompute), 0);  // GPU kernels
      int64_t sum = 0;
      for (int64_t v : c.category_ns) sum += v;
      EXPECT_EQ(sum, c.duration_ns);
    }
    EXPECT_GE(row.slowest_rank, 0);
  }
  EXPECT_FALSE(a.top.device_ops.empty());
  EXPECT_FALSE(a.top.host_scopes.empty());
}

}  // namespace
}  // namespace podscope::viewer
