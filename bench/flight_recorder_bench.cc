// bench/run doctor, the flight recorder (bench_doctor): what the always-on
// ring costs examples/train_mnist's training step in one process, and how
// long a dump of its last 30 s takes.
//
//   doctor.flight_recorder_overhead_pct   the recorder's own work (its
//       thread's CPU time, and the events it makes the program record
//       times the cost of a scope, bench/common/capture_costs.h) in % of
//       the step's CPU time without it: the median over interleaved pairs
//       of runs (one without the recorder, one with it at its defaults:
//       30 s, 64 MiB, a chunk every 100 ms; the pairs alternate which run
//       goes first), with its bootstrap interval (bench/overhead_bench.cc's
//       method). Beside it, the check: the whole process's CPU time per
//       step, paired, in % above the run without.
//   one_process_dump_s   wall time of DumpFlightRecorder after the recorder has
//       recorded train_mnist's steps for longer than its 30 s window: the
//       median of 3 dumps into fresh folders of the temporary directory.
//       Beside it, not a headline, the worst case: a dump of a ring filled
//       to its bound by scopes recorded flat out (`full_ring_dump_s`).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "common/capture_costs.h"
#include "common/cpu_accounting.h"
#include "common/headline.h"
#include "common/paired_stats.h"
#include "mnist/data.h"
#include "mnist/trainer.h"
#include "podscope/profiler/flight_recorder.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::bench {
namespace {

namespace rt = podscope::runtime;

constexpr int kBatch = 256;  // train_mnist's default
constexpr int kSteps = 21;   // per run; the first is not timed
constexpr int kPairs = 20;

// PODSCOPE_BENCH_PAIRS=N runs fewer (or more) pairs: a quick look, not the
// figure.
int EnvPairs() {
  const char* v = std::getenv("PODSCOPE_BENCH_PAIRS");
  const int n = v != nullptr ? std::atoi(v) : 0;
  return n > 0 ? n : kPairs;
}

struct Training {
  std::unique_ptr<rt::Client> client;
  std::unique_ptr<mnist::Trainer> trainer;
  mnist::Dataset data;
  std::vector<int> order;
  std::vector<float> images;
  std::vector<int32_t> labels;
  int step = 0;
  bool ok = true;

  void Step() {
    mnist::Gather(data, order, (step % 4) * kBatch, kBatch, &images, &labels);
    ok = ok && trainer->Step(images, labels).ok();
    ++step;
  }
};

absl::Status Setup(Training* t) {
  auto client = rt::CreateClient(rt::ClientOptions());
  if (!client.ok()) return client.status();
  t->client = *std::move(client);
  auto trainer = mnist::Trainer::Create(t->client.get(),
                                        {t->client->addressable_devices()[0]});
  if (!trainer.ok()) return trainer.status();
  t->trainer = *std::move(trainer);
  t->data = mnist::FakeData(kBatch * 4, 7);
  t->order.resize(t->data.size());
  std::iota(t->order.begin(), t->order.end(), 0);
  return absl::OkStatus();
}

// CPU nanoseconds per timed step of one run, with the recorder or not:
// the whole process's, and of it the profiler's threads'
// (`podscope-flight`).
struct StepCpu {
  double process_ns = 0;
  double profiler_ns = 0;
  double events = 0;  // recorded per step (with the recorder)
};
StepCpu RunCpuPerStep(Training& t, bool recorder) {
  if (recorder) t.ok = t.ok && profiler::StartFlightRecorder().ok();
  t.Step();
  t.ok = t.ok && t.trainer->LastLoss().ok();
  const CpuSnapshot before = TakeCpuSnapshot();
  for (int i = 1; i < kSteps; ++i) t.Step();
  t.ok = t.ok && t.trainer->LastLoss().ok();
  const CpuSplit split = SplitCpu(before, TakeCpuSnapshot());
  StepCpu cpu{static_cast<double>(split.process_ns) / (kSteps - 1),
              static_cast<double>(split.profiler_ns) / (kSteps - 1), 0};
  if (recorder) {
    // The ring keeps 30 s, more than a run: every event of the run.
    const profiler::FlightRecorderStats stats =
        profiler::GetFlightRecorderStats();
    cpu.events = static_cast<double>(stats.events) / kSteps;
    profiler::StopFlightRecorder();
  }
  return cpu;
}

void BM_FlightRecorderOverheadPaired(benchmark::State& state) {
  Training t;
  if (absl::Status s = Setup(&t); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  std::vector<double> pct, profiler_pct, accounted_pct, events;
  UnitCosts units;
  for (auto _ : state) {
    units = MeasureUnitCosts(
        (std::filesystem::temp_directory_path() /
         ("podscope-bench-flight-units-" + std::to_string(getpid())))
            .string());
    RunCpuPerStep(t, false);  // compiles the step's graphs
    RunCpuPerStep(t, true);   // and warms the recorder's first use
    for (int p = 0; p < EnvPairs(); ++p) {
      StepCpu with, without;
      if (p % 2 == 0) {
        without = RunCpuPerStep(t, false);
        with = RunCpuPerStep(t, true);
      } else {
        with = RunCpuPerStep(t, true);
        without = RunCpuPerStep(t, false);
      }
      pct.push_back((with.process_ns / without.process_ns - 1.0) * 100.0);
      profiler_pct.push_back((with.profiler_ns - without.profiler_ns) /
                             without.process_ns * 100.0);
      // The recorder's own work: its thread, and the scopes it makes the
      // program's threads record.
      accounted_pct.push_back(
          (with.profiler_ns + with.events * units.scope_ns) /
          without.process_ns * 100.0);
      events.push_back(with.events);
    }
  }
  if (!t.ok) {
    state.SkipWithError("a training step or the recorder failed");
    return;
  }
  const MedianInterval cpu = BootstrapMedian(pct);
  const MedianInterval accounted = BootstrapMedian(accounted_pct);
  std::printf(
      "flight recorder overhead, %zu interleaved pairs of %d-step runs: "
      "%+.2f %% of the step's CPU time (95 %% CI %+.2f .. %+.2f): the "
      "recorder's thread %+.2f %%, %.1f events per step at %.1f ns. The "
      "whole process's CPU time paired: %+.2f %% (95 %% CI %+.2f .. "
      "%+.2f)\n",
      pct.size(), kSteps - 1, accounted.median, accounted.low, accounted.high,
      Quantile(profiler_pct, 0.5), Quantile(events, 0.5), units.scope_ns,
      cpu.median, cpu.low, cpu.high);
  state.counters["doctor.flight_recorder_overhead_pct"] = accounted.median;
  state.counters["overhead_ci_low_pct"] = accounted.low;
  state.counters["overhead_ci_high_pct"] = accounted.high;
  state.counters["overhead_paired_pct"] = cpu.median;
  state.counters["overhead_paired_ci_low_pct"] = cpu.low;
  state.counters["overhead_paired_ci_high_pct"] = cpu.high;
  state.counters["recorder_thread_pct"] = Quantile(profiler_pct, 0.5);
}
BENCHMARK(BM_FlightRecorderOverheadPaired)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

void BM_DumpLast30s(benchmark::State& state) {
  Training t;
  if (absl::Status s = Setup(&t); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("podscope-bench-dump-" + std::to_string(getpid())))
                              .string();
  std::vector<double> seconds;
  uint64_t events = 0, bytes = 0;
  for (auto _ : state) {
    profiler::FlightRecorderOptions options;
    t.ok = t.ok && profiler::StartFlightRecorder(options).ok();
    // Fill more than the window, so that the dump holds a whole one.
    const auto until = std::chrono::steady_clock::now() + options.window +
                       std::chrono::seconds(1);
    // Steps are queued on the device: wait for each, so that the window
    // holds 30 s of training rather than of queueing.
    while (t.ok && std::chrono::steady_clock::now() < until) {
      t.Step();
      t.ok = t.ok && t.trainer->LastLoss().ok();
    }
    for (int i = 0; i < 3; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto dump = profiler::DumpFlightRecorder(
          dir + "/dump-" + std::to_string(i), "benchmark");
      const auto t1 = std::chrono::steady_clock::now();
      t.ok = t.ok && dump.ok();
      if (!dump.ok()) break;
      seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
      events = dump->events;
      bytes = dump->bytes;
    }
    profiler::StopFlightRecorder();
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!t.ok || seconds.empty()) {
    state.SkipWithError("a training step or a dump failed");
    return;
  }
  const double median = Quantile(seconds, 0.5);
  std::printf("dump of the last 30 s: %.3f s (%llu events, %.1f MiB)\n", median,
              static_cast<unsigned long long>(events),
              static_cast<double>(bytes) / (1 << 20));
  state.counters["one_process_dump_s"] = median;
  state.counters["dump_events"] = static_cast<double>(events);
  state.counters["dump_mib"] = static_cast<double>(bytes) / (1 << 20);
}
BENCHMARK(BM_DumpLast30s)->Iterations(1)->Unit(benchmark::kSecond);

// Not a headline: the worst case of a dump, a ring filled to its 64 MiB
// bound by scopes with arguments recorded flat out.
void BM_DumpFullRing(benchmark::State& state) {
  const std::string dir =
      (std::filesystem::temp_directory_path() /
       ("podscope-bench-full-ring-" + std::to_string(getpid())))
          .string();
  double seconds = 0;
  uint64_t bytes = 0, events = 0;
  bool ok = true;
  for (auto _ : state) {
    ok = profiler::StartFlightRecorder().ok();
    const uint64_t bound = profiler::FlightRecorderOptions().max_bytes;
    uint64_t n = 0;
    while (ok && profiler::GetFlightRecorderStats().bytes < bound * 9 / 10) {
      for (int i = 0; i < 10000; ++i, ++n) {
        PODSCOPE_TRACE("busy", "n", n * 2654435761u);
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto dump = profiler::DumpFlightRecorder(dir, "benchmark");
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    ok = ok && dump.ok();
    if (dump.ok()) {
      bytes = dump->bytes;
      events = dump->events;
    }
    profiler::StopFlightRecorder();
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!ok) {
    state.SkipWithError("the recorder or the dump failed");
    return;
  }
  std::printf("dump of a full ring: %.3f s (%llu events, %.1f MiB)\n", seconds,
              static_cast<unsigned long long>(events),
              static_cast<double>(bytes) / (1 << 20));
  state.counters["full_ring_dump_s"] = seconds;
  state.counters["full_ring_mib"] = static_cast<double>(bytes) / (1 << 20);
}
BENCHMARK(BM_DumpFullRing)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("doctor.flight_recorder_overhead_pct", "%");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
