// AnalyzePodByHost (a host at a time, for sessions of a pod) gives what
// AnalyzePod gives over the whole session loaded at once: every field of
// every analysis, the events the results point at included.
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "pod_trace.h"
#include "podscope/viewer/pod_analysis.h"

namespace podscope::viewer {
namespace {

using analysis_testing::RankTrace;
using analysis_testing::TrainingJobShape;
using analysis_testing::WriteTrainingJob;

std::ostream& operator<<(std::ostream& o, const EventRef& e) {
  return o << e.track << "/" << static_cast<int>(e.kind) << "/" << e.index;
}

// Every field of an analysis, one per line, so that a difference names
// the field.
std::string Describe(const PodAnalysis& a) {
  std::ostringstream o;
  o << "session hosts=" << a.host_names.size() << " processes=" << a.processes
    << " events=" << a.events << " first=" << a.first_ns << "\n";
  for (const std::string& h : a.host_names) o << "host " << h << "\n";
  const StepBreakdown& s = a.steps;
  o << "matched_by_number=" << s.matched_by_number << "\n";
  for (const RankInfo& r : s.ranks) {
    o << "rank " << r.rank << " process=" << r.process << " host=" << r.host
      << " " << r.host_name << " pid=" << r.pid << "\n";
  }
  for (const StepRow& row : s.rows) {
    o << "row " << row.step << " slowest=" << row.slowest_rank
      << " spread=" << row.spread_ns << "\n";
    for (const StepCell& c : row.ranks) {
      o << "  cell " << c.present << " " << c.event << " #" << c.number << " "
        << c.start_ns << "+" << c.duration_ns;
      for (int64_t ns : c.category_ns) o << " " << ns;
      o << "\n";
    }
  }
  for (const RankStepTotals& t : s.totals) {
    o << "totals " << t.steps << " " << t.total_ns << " " << t.median_ns << " "
      << t.max_ns << " slowest=" << t.slowest_count;
    for (int64_t ns : t.category_ns) o << " " << ns;
    o << "\n";
  }
  const StragglerReport& g = a.stragglers;
  o << "joined id=" << g.joined_by_id << " order=" << g.joined_by_order
    << " worst=" << g.worst_wait << "\n";
  for (const JoinedCollective& j : g.collectives) {
    o << "collective " << j.name << " " << j.key << " " << j.joined_by_id
      << " last=" << j.last_rank << " late=" << j.late_by_ns
      << " spread=" << j.spread_ns << " caused=" << j.wait_caused_ns
      << " row=" << j.step_row << "\n";
    for (const CollectiveArrival& c : j.arrivals) {
      o << "  arrival " << c.rank << " " << c.event << " " << c.start_ns << "+"
        << c.duration_ns << " wait=" << c.wait_ns << "\n";
    }
  }
  for (const RankStraggle& r : g.ranks) {
    o << "straggle " << r.rank << " " << r.last_count << " " << r.wait_caused_ns
      << " " << r.late_by_ns << " " << r.waited_ns << "\n";
  }
  o << "test " << g.test.candidate << " " << g.test.by_steps << " "
    << g.test.units << " " << g.test.mean_excess_ns << " " << g.test.t << " "
    << g.test.p_value << " " << g.test.ratio << "\n";
  if (g.straggler) {
    const Straggler& st = *g.straggler;
    o << "straggler " << st.rank << " " << st.last_count << " " << st.joined
      << " " << st.wait_caused_ns << " steps";
    for (int64_t step : st.steps) o << " " << step;
    o << "\n";
    for (const auto& [name, n] : st.collectives)
      o << "  at " << name << " " << n << "\n";
    for (const LongerScope& l : st.longer_scopes) {
      o << "  longer " << l.name << " " << l.own_ns << " " << l.others_median_ns
        << " steps";
      for (int64_t step : l.steps) o << " " << step;
      o << "\n";
    }
  }
  const CompileReport& c = a.compiles;
  o << "compiles " << c.hits << " " << c.misses << " " << c.late_misses << " "
    << c.miss_ns << "\n";
  for (const CompileEvent& e : c.compiles) {
    o << "compile " << e.rank << " " << e.event << " " << e.start_ns << "+"
      << e.duration_ns << " " << e.graph_hash << " "
      << (e.cache_hit ? std::to_string(*e.cache_hit) : "?") << " "
      << e.signature << " ops=" << e.graph_ops << " step=" << e.step
      << " row=" << e.step_row << " late=" << e.late << " stall=" << e.stall_ns
      << " previous=" << e.previous << "\n";
    for (const std::string& ch : e.changes) o << "  change " << ch << "\n";
  }
  for (const auto* list : {&a.top.device_ops, &a.top.host_scopes}) {
    for (const WorkEntry& w : *list) {
      o << "work " << w.name << " " << w.host << " " << w.host_name << " "
        << w.device_id << " " << w.count << " " << w.total_ns << " "
        << w.self_ns << " " << w.step_share << "\n";
    }
  }
  for (const RankOverlap& r : a.top.overlap) {
    o << "overlap " << r.rank << " " << r.collective_ns << " "
      << r.overlapped_ns << "\n";
  }
  for (const HostPeak& p : a.ops.peaks) {
    o << "peak " << p.host << " " << p.host_name << " " << p.peak_gflops << " "
      << p.peak_gbps << " " << p.understated << "\n";
  }
  for (const auto* list : {&a.ops.by_name, &a.ops.by_kind}) {
    for (const RooflineEntry& e : *list) {
      o << "op " << e.name << " " << e.host << " " << e.count << " " << e.flops
        << " " << e.bytes << " " << e.time_ns << " " << e.fraction_of_bound
        << "\n";
    }
  }
  for (const DeviceMemory& m : a.memory) {
    o << "memory " << m.rank << " " << m.host << " " << m.host_name << " "
      << m.device_id << " " << m.peak_bytes << " @" << m.peak_ns << " "
      << m.allocations << "/" << m.frees << " live=" << m.live_count << "\n";
    for (const LiveBuffer& b : m.live_at_peak) {
      o << "  buffer " << b.buffer_id << " " << b.bytes << " " << b.op << " "
        << b.scope << " " << b.allocated_ns << "\n";
    }
  }
  return o.str();
}

// A second process on host2 beside the training job's rank 2, with what
// the job lacks: allocations, kernels with flops under a recorded peak, a
// memory counter and compiles of its own.
void AddSecondProcessOnHost2(const std::string& dir) {
  auto t = RankTrace::Create(
      dir + "/host2-extra.podtrace", "host2", 6, 7,
      {{"machine.peak_gflops", "50"}, {"machine.peak_gbps", "5"}});
  ASSERT_TRUE(t.ok()) << t.status();
  RankTrace& r = **t;
  const uint32_t main = r.Thread("main");
  const uint32_t stream = r.Device("stream 0", 0);
  const uint32_t allocs = r.Device("device 0 allocations", 0, 2);
  const uint32_t counter = r.Counter("device 1 memory in use");
  for (int step = 0; step < 6; ++step) {
    const int64_t t0 = 1'000'000 + step * 5'000'000;
    r.Slice(main, t0, 4'000'000, "train_step", {{"step", int64_t{step}}});
    r.Slice(main, t0 + 10'000, 300'000, "Compile",
            {{"graph_hash", int64_t{step < 4 ? 7 : 8}},
             {"cache_hit", int64_t{step == 0 || step == 4 ? 0 : 1}},
             {"signature", std::string(step < 4 ? "f32[8,4]" : "f32[9,4]")}});
    r.Slice(stream, t0 + 400'000, 2'000'000, "dense/dot",
            {{"op", std::string("dot")},
             {"flops", int64_t{40'000'000}},
             {"bytes_accessed", int64_t{4'000'000}}});
    r.Instant(allocs, t0 + 400'000, "Allocate",
              {{"buffer_id", int64_t{step}},
               {"bytes", int64_t{1000 + step}},
               {"op", std::string("dot")}});
    if (step % 2 == 1) {
      r.Instant(
          allocs, t0 + 3'000'000, "Free",
          {{"buffer_id", int64_t{step}}, {"bytes", int64_t{1000 + step}}});
    }
    r.CounterValue(counter, t0, 100.0 * step);
  }
  ASSERT_TRUE(r.Close().ok());
}

PodAnalysis Whole(const std::string& dir, const PodAnalysisOptions& options) {
  auto store = TraceStore::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? AnalyzePod(**store, options) : PodAnalysis();
}

PodAnalysis ByHost(const std::string& dir, const PodAnalysisOptions& options,
                   int threads) {
  OpenOptions open;
  open.detail_files = 1;
  open.overview_from_index = true;
  auto store = TraceStore::Open(dir, open);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  EXPECT_TRUE((*store)->is_overview());
  EXPECT_EQ((*store)->event_count(), 0u);
  size_t calls = 0;
  auto a = AnalyzePodByHost(**store, options, threads, nullptr,
                            [&](size_t done, size_t total) {
                              ++calls;
                              EXPECT_EQ(total, (*store)->hosts().size());
                              EXPECT_EQ(done, calls);
                            });
  EXPECT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(calls, (*store)->hosts().size());
  return a.ok() ? std::move(*a) : PodAnalysis();
}

TEST(AnalyzeByHost, EqualsTheWholeSessionsAnalysis) {
  TrainingJobShape shape;
  shape.ranks = 6;
  shape.steps = 12;
  shape.recompile_at = 7;
  // Rank 3's convolutions are slower: it is last at the all-reduces and
  // its longer scopes are looked for on every other host.
  shape.scale = [](int rank, int, const std::string& op) {
    return rank == 3 && op == "conv2d" ? 1.6 : 1.0;
  };
  const std::string dir = WriteTrainingJob("by-host", shape);
  ASSERT_FALSE(dir.empty());
  AddSecondProcessOnHost2(dir);
  PodAnalysisOptions options;
  options.top = 5;
  const PodAnalysis whole = Whole(dir, options);
  ASSERT_TRUE(whole.stragglers.straggler.has_value());
  // Process index 3 (host2's second process comes before it).
  EXPECT_EQ(whole.steps.ranks[whole.stragglers.straggler->rank].rank, 3);
  EXPECT_FALSE(whole.stragglers.straggler->longer_scopes.empty());
  EXPECT_EQ(whole.host_names.size(), 6u);
  EXPECT_EQ(whole.processes, 7u);
  EXPECT_GT(whole.compiles.late_misses, 0u);
  EXPECT_FALSE(whole.memory.empty());
  EXPECT_FALSE(whole.ops.by_name.empty());
  const std::string expected = Describe(whole);
  // One host at a time, and several at once.
  EXPECT_EQ(Describe(ByHost(dir, options, 1)), expected);
  EXPECT_EQ(Describe(ByHost(dir, options, 3)), expected);
}

TEST(AnalyzeByHost, EqualsTheWholeAnalysisWhenStepsMatchByOrder) {
  // Steps without numbers on one rank: rows are matched by order.
  const std::string dir = analysis_testing::FreshDir("by-host-order");
  for (int rank = 0; rank < 3; ++rank) {
    auto t = RankTrace::Create(dir + "/r" + std::to_string(rank) + ".podtrace",
                               "node" + std::to_string(rank), rank, 3);
    ASSERT_TRUE(t.ok()) << t.status();
    const uint32_t main = (*t)->Thread("main");
    const uint32_t dev = (*t)->Device("stream", 0);
    for (int k = 0; k < 5; ++k) {
      const int64_t t0 = 1'000'000 * (k + 1) + rank * 1000;
      (*t)->Slice(main, t0, 800'000, "train_step");
      (*t)->Slice(dev, t0 + 100'000 + (rank == 1 ? 50'000 * k : 0), 200'000,
                  "AllReduce");
    }
    ASSERT_TRUE((*t)->Close().ok());
  }
  const PodAnalysis whole = Whole(dir, {});
  EXPECT_FALSE(whole.steps.matched_by_number);
  EXPECT_EQ(whole.steps.rows.size(), 5u);
  EXPECT_EQ(Describe(ByHost(dir, {}, 2)), Describe(whole));
}

}  // namespace
}  // namespace podscope::viewer
