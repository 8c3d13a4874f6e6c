// `bench/run analysis`: the whole pod analysis pass (AnalyzePod) over a
// synthetic 8-rank session, per million events, against reading the same
// session into a TraceStore in the same run.
//
// Headlines:
//   analysis.ms_per_million_events  AnalyzePod time per million events
//   analysis.vs_read                AnalyzePod time / TraceStore::Open time
//   diff.steps_per_s                `podscope diff`'s work (both sessions
//                                   opened, then DiffSessions) on two
//                                   1,000-step 8-rank sessions: steps of
//                                   both sessions per second
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/headline.h"
#include "podscope/base/numeric.h"
#include "podscope/trace_format/writer.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/session_diff.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::bench {
namespace {

namespace tf = trace_format;

constexpr int kRanks = 8;
constexpr int kSteps = 200;
constexpr int kKernels = 40;

// Each rank: train_step with forward/backward scopes and a loader thread;
// kernels with flops/bytes/op args; an AllReduce per step with
// collective_id and wait_ns (rank 3 late); Allocate/Free per kernel.
std::string WriteSession() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("podscope-bench-analysis-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (int r = 0; r < kRanks; ++r) {
    auto w = *tf::TraceWriter::Create(
        (dir / ("rank" + std::to_string(r) + ".podtrace")).string());
    tf::proto::Metadata m;
    m.set_host("host" + std::to_string(r));
    m.set_pid(100 + r);
    m.set_process_index(r);
    m.set_process_count(kRanks);
    (*m.mutable_attributes())["machine.peak_gflops"] = "50";
    (*m.mutable_attributes())["machine.peak_gbps"] = "20";
    w->SetMetadata(m);
    auto track = [&](tf::proto::TrackKind kind, const std::string& name,
                     int stream) {
      tf::proto::Track t;
      t.set_kind(kind);
      t.set_name(name);
      t.set_device_id(r);
      t.set_stream_id(stream);
      return w->AddTrack(t);
    };
    const uint32_t main = track(tf::proto::TRACK_KIND_THREAD, "main", 0);
    const uint32_t loader = track(tf::proto::TRACK_KIND_THREAD, "loader 0", 0);
    const uint32_t dev =
        track(tf::proto::TRACK_KIND_DEVICE_STREAM, "device stream", 0);
    const uint32_t mem =
        track(tf::proto::TRACK_KIND_DEVICE_STREAM, "device allocations", 2);
    auto s = [&](const char* x) { return w->InternString(x); };
    const uint32_t k_step = s("step"), k_flops = s("flops"),
                   k_bytes = s("bytes_accessed"), k_op = s("op"),
                   k_id = s("collective_id"), k_wait = s("wait_ns"),
                   k_buf = s("buffer_id"), k_b = s("bytes"), v_dot = s("dot"),
                   n_step = s("train_step"), n_fwd = s("forward"),
                   n_bwd = s("backward"), n_load = s("loader_prepare"),
                   n_ar = s("AllReduce"), n_alloc = s("Allocate"),
                   n_free = s("Free");
    std::vector<uint32_t> kernel_names;
    for (int k = 0; k < kKernels; ++k) {
      kernel_names.push_back(s(("layer" + std::to_string(k) + "/dot").c_str()));
    }
    int64_t buffer = 0;
    for (int64_t st = 0; st < kSteps; ++st) {
      const int64_t base = st * 10'000'000;
      const int64_t late = r == 3 ? 300'000 : 0;
      w->AddSlice(loader, base, 500'000, n_load);
      const std::vector<tf::Arg> step_args = {{k_step, st}};
      w->AddSlice(main, base, 9'000'000, n_step, step_args);
      w->AddSlice(main, base + 10'000, 4'000'000 + late, n_fwd);
      w->AddSlice(main, base + 4'100'000 + late, 3'000'000, n_bwd);
      for (int k = 0; k < kKernels; ++k) {
        const int64_t t = base + 20'000 + k * 150'000;
        const std::vector<tf::Arg> args = {{k_flops, int64_t{2'000'000}},
                                           {k_bytes, int64_t{400'000}},
                                           {k_op, tf::StringId{v_dot}}};
        w->AddSlice(dev, t, 100'000, kernel_names[k], args);
        const std::vector<tf::Arg> a = {{k_buf, buffer}, {k_b, int64_t{4096}}};
        w->AddInstant(mem, t, n_alloc, a);
        w->AddInstant(mem, t + 100'000, n_free, a);
        ++buffer;
      }
      const int64_t arrive = base + 7'200'000 + late;
      const std::vector<tf::Arg> ar = {
          {k_id, tf::StringId{s(("g#" + std::to_string(st)).c_str())}},
          {k_wait, base + 7'500'000 - arrive}};
      w->AddSlice(dev, arrive, base + 7'800'000 - arrive, n_ar, ar);
    }
    if (!w->Close().ok()) return "";
  }
  return dir.string();
}

const std::string& Session() {
  static const std::string dir = WriteSession();
  return dir;
}

void BM_AnalyzePod(benchmark::State& state) {
  const std::string& dir = Session();
  // The reference: reading the same session, as warm as the analysis
  // (its files in the page cache, the allocator primed): one untimed open,
  // then the median of three timed ones.
  auto store = viewer::TraceStore::Open(dir);
  if (!store.ok()) {
    state.SkipWithError(std::string(store.status().message()).c_str());
    return;
  }
  std::vector<double> opens;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto again = viewer::TraceStore::Open(dir);
    opens.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count());
    if (!again.ok()) {
      state.SkipWithError(std::string(again.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(again);
  }
  const double open_s = base::Median(opens);
  const double events = static_cast<double>((*store)->event_count());
  size_t joined = 0;
  for (auto _ : state) {
    viewer::PodAnalysis a = viewer::AnalyzePod(**store);
    joined = a.stragglers.collectives.size();
    benchmark::DoNotOptimize(a);
  }
  state.counters["events"] = events;
  state.counters["joined_collectives"] = static_cast<double>(joined);
  state.counters["open_ms"] = open_s * 1e3;
  // Inverted iteration-invariant rates: seconds per pass / value.
  // Seconds per pass / (events / 1e9) = ms per million events.
  state.counters["analysis.ms_per_million_events"] = benchmark::Counter(
      events / 1e9, benchmark::Counter::kIsIterationInvariantRate |
                        benchmark::Counter::kInvert);
  // Seconds per pass / seconds to read the session.
  state.counters["analysis.vs_read"] =
      benchmark::Counter(open_s, benchmark::Counter::kIsIterationInvariantRate |
                                     benchmark::Counter::kInvert);
}
BENCHMARK(BM_AnalyzePod)->Unit(benchmark::kMillisecond)->UseRealTime();

// A data-parallel job of `steps` steps on 8 ranks: per step a loader
// scope, a forward scope over two device ops, an all-reduce joined by
// collective_id, with durations jittered by `seed` (and conv2d on rank 5
// scaled by `slow`).
std::string WriteTrainingJob(const std::string& name, int steps, uint64_t seed,
                             double slow) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("podscope-bench-diff-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0.97, 1.03);
  std::vector<std::unique_ptr<tf::TraceWriter>> w;
  std::vector<uint32_t> main, dev;
  for (int r = 0; r < kRanks; ++r) {
    w.push_back(*tf::TraceWriter::Create(
        (dir / ("rank" + std::to_string(r) + ".podtrace")).string()));
    tf::proto::Metadata m;
    m.set_host("host" + std::to_string(r));
    m.set_pid(100 + r);
    m.set_process_index(r);
    m.set_process_count(kRanks);
    w[r]->SetMetadata(m);
    tf::proto::Track t;
    t.set_kind(tf::proto::TRACK_KIND_THREAD);
    t.set_name("main");
    main.push_back(w[r]->AddTrack(t));
    t.set_kind(tf::proto::TRACK_KIND_DEVICE_STREAM);
    t.set_name("device stream");
    t.set_device_id(0);
    dev.push_back(w[r]->AddTrack(t));
  }
  int64_t start = 0;
  std::vector<int64_t> arrive(kRanks);
  for (int64_t st = 0; st < steps; ++st) {
    for (int r = 0; r < kRanks; ++r) {
      tf::TraceWriter& x = *w[r];
      const int64_t load = static_cast<int64_t>(500'000 * jitter(rng));
      const int64_t conv =
          static_cast<int64_t>(2'000'000 * jitter(rng) * (r == 5 ? slow : 1.0));
      const int64_t mm = static_cast<int64_t>(1'000'000 * jitter(rng));
      x.AddSlice(main[r], start, load, x.InternString("loader_next"));
      x.AddSlice(main[r], start + load, conv + mm, x.InternString("forward"));
      x.AddSlice(dev[r], start + load, conv, x.InternString("conv2d"));
      x.AddSlice(dev[r], start + load + conv, mm, x.InternString("matmul"));
      arrive[r] = start + load + conv + mm;
    }
    const int64_t end =
        *std::max_element(arrive.begin(), arrive.end()) + 200'000;
    for (int r = 0; r < kRanks; ++r) {
      tf::TraceWriter& x = *w[r];
      const std::vector<tf::Arg> ar = {
          {x.InternString("collective_id"),
           tf::StringId{x.InternString("world#" + std::to_string(st))}},
          {x.InternString("wait_ns"), end - 200'000 - arrive[r]}};
      x.AddSlice(dev[r], arrive[r], end - arrive[r],
                 x.InternString("all_reduce"), ar);
      const std::vector<tf::Arg> step = {{x.InternString("step"), st}};
      x.AddSlice(main[r], start, end - start, x.InternString("train_step"),
                 step);
    }
    start = end;
  }
  for (auto& x : w) {
    if (!x->Close().ok()) return "";
  }
  return dir.string();
}

void BM_Diff(benchmark::State& state) {
  constexpr int kDiffSteps = 1000;
  static const std::string base = WriteTrainingJob("base", kDiffSteps, 1, 1.0);
  static const std::string cand = WriteTrainingJob("cand", kDiffSteps, 2, 1.3);
  if (base.empty() || cand.empty()) {
    state.SkipWithError("writing the sessions failed");
    return;
  }
  size_t compared = 0;
  bool found = false;
  for (auto _ : state) {
    auto b = viewer::TraceStore::Open(base);
    auto c = viewer::TraceStore::Open(cand);
    if (!b.ok() || !c.ok()) {
      state.SkipWithError("opening the sessions failed");
      return;
    }
    const viewer::SessionDiff d = viewer::DiffSessions(**b, **c);
    compared = d.base_steps + d.cand_steps;
    found = d.step_median.significant && d.largest_rank == 5;
    benchmark::DoNotOptimize(d);
  }
  // The slower conv2d on rank 5 must be found, or the figure means nothing.
  if (!found) state.SkipWithError("the diff did not find rank 5's change");
  state.counters["steps_compared"] = static_cast<double>(compared);
  state.counters["diff.steps_per_s"] =
      benchmark::Counter(static_cast<double>(compared),
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Diff)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

}  // namespace
}  // namespace podscope::bench

int main(int argc, char** argv) {
  podscope::bench::RegisterHeadline("analysis.ms_per_million_events", "ms");
  podscope::bench::RegisterHeadline("analysis.vs_read", "x");
  podscope::bench::RegisterHeadline("diff.steps_per_s", "steps/s");
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
