// bench/run runtime, the profiling-overhead part (bench_runtime_overhead):
// what recording costs examples/train_mnist's training step in one process,
// measured so that the machine's other work cancels out.
//
//   train.profiling_overhead_pct           the median over interleaved
//       pairs (one run without a capture, one with a default capture,
//       alternating which goes first: ABBA ABBA ...) of the pair's step
//       time ratio, in % above 1. Both runs of a pair are seconds apart in
//       the same process, so load that lasts longer than a pair affects
//       both alike; the quartiles of the per-pair figures are printed and
//       kept as counters (the spread).
//   train.profiling_overhead_sampling_pct  the same with stack sampling at
//       997 Hz added to the capture.
//
// Counters beside them: the quartiles, the minimum and maximum pair, and
// the same median measured in process CPU time (all threads, the capture's
// writer and sampler included). Small on purpose: batch 64 of synthetic
// images, two steps a run, one device. Starting and stopping a capture
// are outside the timed steps (they are a session's fixed cost, not a
// step's).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "common/headline.h"
#include "mnist/data.h"
#include "mnist/trainer.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::bench {
namespace {

namespace rt = podscope::runtime;

double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Linear interpolation between the order statistics around q.
double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<size_t>(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (v[i + 1] - v[i]) * (pos - static_cast<double>(i));
}

// Per-pair overheads (%) of one kind of capture against no capture.
struct Pairs {
  std::vector<double> wall_pct;
  std::vector<double> cpu_pct;
};

void Report(benchmark::State& state, const char* what, const Pairs& pairs,
            const std::string& headline, const std::string& prefix) {
  const double median = Quantile(pairs.wall_pct, 0.5);
  const double q25 = Quantile(pairs.wall_pct, 0.25);
  const double q75 = Quantile(pairs.wall_pct, 0.75);
  const double lo =
      *std::min_element(pairs.wall_pct.begin(), pairs.wall_pct.end());
  const double hi =
      *std::max_element(pairs.wall_pct.begin(), pairs.wall_pct.end());
  const double cpu = Quantile(pairs.cpu_pct, 0.5);
  std::printf(
      "%s: median %.2f %% over %zu interleaved pairs (quartiles %.2f .. "
      "%.2f %%, pairs %.2f .. %.2f %%); in process CPU time: median %.2f %%\n",
      what, median, pairs.wall_pct.size(), q25, q75, lo, hi, cpu);
  state.counters[headline] = median;
  state.counters[prefix + "q25_pct"] = q25;
  state.counters[prefix + "q75_pct"] = q75;
  state.counters[prefix + "min_pct"] = lo;
  state.counters[prefix + "max_pct"] = hi;
  state.counters[prefix + "cpu_pct"] = cpu;
}

void BM_TrainStepOverheadPaired(benchmark::State& state) {
  constexpr int kBatch = 64;
  constexpr int kStepsPerRun = 2;
  constexpr int kPairs = 10;  // per kind of capture
  auto client = rt::CreateClient(rt::ClientOptions());
  if (!client.ok()) {
    state.SkipWithError(client.status().ToString().c_str());
    return;
  }
  auto trainer = mnist::Trainer::Create(client->get(),
                                        {(*client)->addressable_devices()[0]});
  if (!trainer.ok()) {
    state.SkipWithError(trainer.status().ToString().c_str());
    return;
  }
  const mnist::Dataset data = mnist::FakeData(kBatch * 4, 7);
  std::vector<int> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> images;
  std::vector<int32_t> labels;
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("podscope-bench-overhead-" + std::to_string(getpid())))
          .string();
  profiler::TraceOptions sampling;
  sampling.sampling_hz = 997;
  int step = 0;
  bool ok = true;
  double cpu = 0;  // per step, of the last run
  // One run of kStepsPerRun steps; kind 0: no capture, 1: default capture,
  // 2: capture with sampling. Seconds per step.
  auto run = [&](int kind) {
    if (kind > 0) {
      ok = ok && profiler::StartTrace(
                     dir, kind == 2 ? sampling : profiler::TraceOptions())
                     .ok();
    }
    const double cpu0 = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kStepsPerRun; ++i, ++step) {
      mnist::Gather(data, order, (step % 4) * kBatch, kBatch, &images, &labels);
      ok = ok && (*trainer)->Step(images, labels).ok();
    }
    ok = ok && (*trainer)->LastLoss().ok();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count() /
        kStepsPerRun;
    cpu = (ProcessCpuSeconds() - cpu0) / kStepsPerRun;
    if (kind > 0) ok = ok && profiler::StopTrace().ok();
    return seconds;
  };
  Pairs traced, sampled;
  std::vector<double> plain;
  for (auto _ : state) {
    run(0);  // compiles the step's graphs
    run(1);  // and warms the capture's first use
    for (int pair = 0; pair < 2 * kPairs; ++pair) {
      // Alternate the kind of capture, and which run of a pair goes
      // first, so that neither order nor drift favours one side.
      const int kind = 1 + pair % 2;
      const bool plain_first = (pair / 2) % 2 == 0;
      double p, q, p_cpu, q_cpu;
      if (plain_first) {
        p = run(0);
        p_cpu = cpu;
        q = run(kind);
        q_cpu = cpu;
      } else {
        q = run(kind);
        q_cpu = cpu;
        p = run(0);
        p_cpu = cpu;
      }
      plain.push_back(p);
      Pairs& out = kind == 1 ? traced : sampled;
      out.wall_pct.push_back((q / p - 1.0) * 100.0);
      out.cpu_pct.push_back((q_cpu / p_cpu - 1.0) * 100.0);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!ok) {
    state.SkipWithError("a training step or the capture failed");
    return;
  }
  state.counters["median_step_ms"] = Quantile(plain, 0.5) * 1e3;
  Report(state, "profiling overhead (default capture)", traced,
         "train.profiling_overhead_pct", "overhead_");
  Report(state, "profiling overhead (capture with sampling)", sampled,
         "train.profiling_overhead_sampling_pct", "sampling_overhead_");
}
BENCHMARK(BM_TrainStepOverheadPaired)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("train.profiling_overhead_pct", "%");
  RegisterHeadline("train.profiling_overhead_sampling_pct", "%");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
