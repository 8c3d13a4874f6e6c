// bench/run runtime, the profiling-overhead part (bench_runtime_overhead):
// what recording costs examples/train_mnist's training step in one process,
// measured in CPU time so that the machine's other work does not move it
// the way it moves wall time.
//
//   train.profiling_overhead_pct            the median, over interleaved
//       pairs of runs (one without a capture, one with a default capture;
//       run in quadruplets with the sampling and remote runs below, in the
//       orders of a balanced Latin square in turn), of the capture's own
//       CPU time per step in % of the run without's; with `_ci_low` /
//       `_ci_high`, its 95 % bootstrap confidence interval.
//   train.profiling_overhead_sampling_pct   the same with stack sampling at
//       997 Hz added to the capture (and its interval).
//   train.profiling_overhead_remote_pct     the same for a remote capture:
//       the process serves its profiler on loopback and a `podscope
//       capture` process streams its trace while it trains (the client's
//       own CPU is another process's, as on another host; the server's
//       threads are counted as the profiler's).
//
// A run is kSteps steps of the real step (the trainer train_mnist uses, at
// its default batch of 256), the first one not timed: it pays for what a
// run starts (the capture's first use of each thread's buffer). A capture
// is started before that first step and stopped after the timed ones; the
// stop (the last flush, the index, the close) is a session's fixed cost,
// reported apart as `stop_ms`. CPU time is every thread's, the profiler's
// own (the drain and the writer) included: where the cost goes is printed
// (the program's threads, where recording and the sampler's signal
// handler run, against the profiler's threads). Wall time is printed
// beside, never the headline. Where the machine counts instructions
// (ProcessEventCounter, every thread, user and kernel mode), each figure
// also prints the paired difference of instructions retired, steadier
// still than CPU time; many virtual machines have no such counter, and the
// log then says so.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/capture_costs.h"
#include "common/cpu_accounting.h"
#include "common/headline.h"
#include "common/paired_stats.h"
#include "mnist/data.h"
#include "mnist/trainer.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "podscope/runtime/pjrt/client.h"
#include "podscope/trace_format/reader.h"

namespace podscope::bench {
namespace {

namespace rt = podscope::runtime;

constexpr int kBatch = 256;  // train_mnist's default
constexpr int kSteps = 21;   // per run; the first is not timed
constexpr int kPairs = 20;   // per kind of capture
constexpr int kRemote = 3;   // the kind of run a remote client captures

// CPU time between two snapshots of threads that are neither the
// program's nor the profiler's own ("podscope-*"): the profiler server's.
int64_t OutsideCpu(const CpuSnapshot& before, const CpuSnapshot& after,
                   const std::set<pid_t>& program) {
  int64_t ns = 0;
  for (const auto& [tid, t] : after.threads) {
    if (program.count(tid) != 0 || t.name.rfind("podscope-", 0) == 0) continue;
    auto it = before.threads.find(tid);
    ns += t.cpu_ns - (it != before.threads.end() ? it->second.cpu_ns : 0);
  }
  return ns;
}

// PODSCOPE_BENCH_PAIRS=N runs fewer (or more) pairs: a quick look, not the
// figure.
int EnvPairs() {
  const char* v = std::getenv("PODSCOPE_BENCH_PAIRS");
  const int n = v != nullptr ? std::atoi(v) : 0;
  return n > 0 ? n : kPairs;
}

extern "C" char** environ;

// Waits up to 10 s until this process is tracing (`tracing`) or not;
// whether it got there.
bool WaitForTracing(bool tracing) {
  for (int i = 0; i < 1000 && profiler::IsTracing() != tracing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return profiler::IsTracing() == tracing;
}

// A `podscope capture` process streaming this process's trace from
// `address` into `logdir` until it is stopped.
class RemoteCapture {
 public:
  bool Start(const std::string& address, const std::string& logdir) {
#ifdef PODSCOPE_BIN
    std::vector<std::string> args = {
        PODSCOPE_BIN, "capture",       "--service_addr", address,   "--logdir",
        logdir,       "--duration_ms", "600000",         "--stream"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const int rc =
        posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return false;
    // Its capture is this process's session once it has started.
    return WaitForTracing(true);
#else
    (void)address;
    (void)logdir;
    return false;
#endif
  }
  // Ends the client (the server ends the capture when its stream breaks)
  // and waits until the capture is over here.
  bool Stop() {
    if (pid_ <= 0) return false;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WaitForTracing(false);
  }
  ~RemoteCapture() {
    if (pid_ > 0) Stop();
  }

 private:
  pid_t pid_ = -1;
};

// One run's cost per timed step.
struct RunCost {
  double cpu_ns = 0;
  double wall_ns = 0;
  double program_ns = 0;
  double profiler_ns = 0;
  // The capture's own work per step: the profiler's threads, the scopes
  // recorded on the program's threads, and the sampler's signals.
  double accounted_ns = 0;
  double recording_ns = 0;
  double sampler_ns = 0;
  double samples = 0;     // per step
  double handler_us = 0;  // the handler's CPU time per sample
  double fast_share = 0;  // of the stacks, those the cached unwinder walked
  double events = 0;      // recorded per step
  double stop_ns = 0;     // CPU time of StopTrace, not per step
  // Instructions retired by every thread per step, where the machine has
  // the counter (else negative).
  double instructions = -1;
};

// Per-pair figures of one kind of capture against no capture.
struct Pairs {
  std::vector<double> accounted_pct;  // the headline
  std::vector<double> cpu_pct;        // the paired difference, a check
  std::vector<double> wall_pct;
  std::vector<double> program_pct;   // the program's threads' extra CPU
  std::vector<double> profiler_pct;  // the profiler's threads' CPU
  std::vector<double> recording_pct;
  std::vector<double> sampler_pct;
  std::vector<double> samples;
  std::vector<double> handler_us;
  std::vector<double> fast_share;
  std::vector<double> events;
  std::vector<double> stop_ms;
  std::vector<double> instructions_pct;  // where the machine counts them
};

void Add(Pairs& pairs, const RunCost& plain, const RunCost& traced) {
  const double base = plain.cpu_ns;
  pairs.accounted_pct.push_back(traced.accounted_ns / base * 100.0);
  pairs.cpu_pct.push_back((traced.cpu_ns / base - 1.0) * 100.0);
  pairs.wall_pct.push_back((traced.wall_ns / plain.wall_ns - 1.0) * 100.0);
  pairs.program_pct.push_back((traced.program_ns - plain.program_ns) / base *
                              100.0);
  pairs.profiler_pct.push_back((traced.profiler_ns - plain.profiler_ns) / base *
                               100.0);
  pairs.recording_pct.push_back(traced.recording_ns / base * 100.0);
  pairs.sampler_pct.push_back(traced.sampler_ns / base * 100.0);
  pairs.samples.push_back(traced.samples);
  pairs.handler_us.push_back(traced.handler_us);
  pairs.fast_share.push_back(traced.fast_share);
  pairs.events.push_back(traced.events);
  pairs.stop_ms.push_back(traced.stop_ns / 1e6);
  if (plain.instructions > 0 && traced.instructions >= 0) {
    pairs.instructions_pct.push_back(
        (traced.instructions / plain.instructions - 1.0) * 100.0);
  }
}

void Report(benchmark::State& state, const char* what, const Pairs& pairs,
            const std::string& headline, const std::string& prefix) {
  const MedianInterval accounted = BootstrapMedian(pairs.accounted_pct);
  const MedianInterval cpu = BootstrapMedian(pairs.cpu_pct);
  const MedianInterval wall = BootstrapMedian(pairs.wall_pct);
  const double program = Quantile(pairs.program_pct, 0.5);
  const double profiler = Quantile(pairs.profiler_pct, 0.5);
  const double recording = Quantile(pairs.recording_pct, 0.5);
  const double sampler = Quantile(pairs.sampler_pct, 0.5);
  const double stop = Quantile(pairs.stop_ms, 0.5);
  std::printf(
      "%s, %zu interleaved pairs of %d-step runs: %+.2f %% of the step's CPU "
      "time (95 %% CI %+.2f .. %+.2f): the profiler's threads %+.2f %%, "
      "recording on the program's threads %+.2f %% (%.1f events per step), "
      "the sampler %+.2f %% (%.1f samples per step, %.2f us of CPU each in "
      "the handler, %.0f %% walked by the cached unwinder); "
      "stopping the capture %.1f ms of CPU. The whole process's CPU time "
      "paired: %+.2f %% (95 %% CI %+.2f .. %+.2f; the program's threads "
      "%+.2f %%); wall time %+.2f %% (95 %% CI %+.2f .. %+.2f)\n",
      what, pairs.accounted_pct.size(), kSteps - 1, accounted.median,
      accounted.low, accounted.high, profiler, recording,
      Quantile(pairs.events, 0.5), sampler, Quantile(pairs.samples, 0.5),
      Quantile(pairs.handler_us, 0.5), Quantile(pairs.fast_share, 0.5) * 100,
      stop, cpu.median, cpu.low, cpu.high, program, wall.median, wall.low,
      wall.high);
  state.counters[headline] = accounted.median;
  const std::string stem = headline.substr(0, headline.size() - 4);
  state.counters[stem + "_ci_low_pct"] = accounted.low;
  state.counters[stem + "_ci_high_pct"] = accounted.high;
  state.counters[prefix + "paired_pct"] = cpu.median;
  state.counters[prefix + "paired_ci_low_pct"] = cpu.low;
  state.counters[prefix + "paired_ci_high_pct"] = cpu.high;
  state.counters[prefix + "program_threads_pct"] = program;
  state.counters[prefix + "profiler_threads_pct"] = profiler;
  state.counters[prefix + "recording_pct"] = recording;
  state.counters[prefix + "sampler_pct"] = sampler;
  state.counters[prefix + "stop_ms"] = stop;
  state.counters[prefix + "wall_pct"] = wall.median;
  state.counters[prefix + "wall_ci_low_pct"] = wall.low;
  state.counters[prefix + "wall_ci_high_pct"] = wall.high;
  // Instructions retired, paired like the CPU time: steadier than it where
  // the machine has the counter, printed beside the headline.
  if (pairs.instructions_pct.size() == pairs.accounted_pct.size() &&
      !pairs.instructions_pct.empty()) {
    const MedianInterval inst = BootstrapMedian(pairs.instructions_pct);
    std::printf(
        "  %s: instructions retired by every thread, paired: %+.2f %% (95 %% "
        "CI %+.2f .. %+.2f)\n",
        what, inst.median, inst.low, inst.high);
    state.counters[prefix + "instructions_paired_pct"] = inst.median;
    state.counters[prefix + "instructions_paired_ci_low_pct"] = inst.low;
    state.counters[prefix + "instructions_paired_ci_high_pct"] = inst.high;
  }
}

void BM_TrainStepOverheadPaired(benchmark::State& state) {
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
  auto one_step = [&] {
    mnist::Gather(data, order, (step % 4) * kBatch, kBatch, &images, &labels);
    ok = ok && (*trainer)->Step(images, labels).ok();
    ++step;
  };
  // One run; kind 0: no capture, 1: default capture, 2: capture with
  // sampling, 3: a remote capture streaming (kRemote).
  UnitCosts units;
  std::unique_ptr<profiler::ProfilerServer> server;
  // The program's own threads (the runtime's pool, the main thread), from
  // before the server started: every other thread but the profiler's
  // "podscope-*" ones is the server's.
  std::set<pid_t> program_threads;
  const std::string remote_dir = dir + "-remote";
  // Instructions retired, where the machine counts them: opened on every
  // thread before each run's capture starts, so that the profiler's threads
  // are counted too (inherited from the thread that creates them).
  bool count_instructions = true;
  if (auto probe = ProcessEventCounter::Open(); !probe.ok()) {
    count_instructions = false;
    std::printf(
        "instructions retired: not counted here (%s); the figures are CPU "
        "time\n",
        std::string(probe.status().message()).c_str());
  } else if (!(*probe)->kernel()) {
    std::printf(
        "instructions retired: user mode only (perf_event_paranoid > 1)\n");
  }
  auto run = [&](int kind) {
    std::unique_ptr<ProcessEventCounter> instructions;
    if (count_instructions) {
      if (auto c = ProcessEventCounter::Open(); c.ok()) {
        instructions = *std::move(c);
      }
    }
    RemoteCapture remote;
    if (kind == kRemote) {
      ok = ok && server != nullptr &&
           remote.Start(server->address(), remote_dir);
    } else if (kind > 0) {
      ok = ok && profiler::StartTrace(
                     dir, kind == 2 ? sampling : profiler::TraceOptions())
                     .ok();
    }
    one_step();
    ok = ok && (*trainer)->LastLoss().ok();
    const CpuSnapshot before = TakeCpuSnapshot();
    const profiler::SamplingCost sampled0 = profiler::CurrentSamplingCost();
    const int64_t instructions0 = instructions ? instructions->Read() : 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 1; i < kSteps; ++i) one_step();
    ok = ok && (*trainer)->LastLoss().ok();
    const auto t1 = std::chrono::steady_clock::now();
    const int64_t instructions1 = instructions ? instructions->Read() : 0;
    const profiler::SamplingCost sampled1 = profiler::CurrentSamplingCost();
    const CpuSnapshot after = TakeCpuSnapshot();
    CpuSplit split = SplitCpu(before, after);
    if (kind == kRemote) {
      // The server's threads (gRPC's) do the capture's streaming.
      const int64_t server_ns = OutsideCpu(before, after, program_threads);
      split.profiler_ns += server_ns;
      split.program_ns -= server_ns;
    }
    RunCost cost;
    constexpr double kTimed = kSteps - 1;
    if (instructions) {
      cost.instructions =
          static_cast<double>(instructions1 - instructions0) / kTimed;
    }
    cost.cpu_ns = static_cast<double>(split.process_ns) / kTimed;
    cost.program_ns = static_cast<double>(split.program_ns) / kTimed;
    cost.profiler_ns = static_cast<double>(split.profiler_ns) / kTimed;
    cost.wall_ns =
        std::chrono::duration<double, std::nano>(t1 - t0).count() / kTimed;
    if (kind == kRemote) {
      // What the session wrote (after a drain pass, so that the last
      // step's events are in), over every step of the run.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const double written =
          static_cast<double>(profiler::CurrentSessionStats().events);
      const int64_t stop0 = ProcessCpuNs();
      ok = ok && remote.Stop();
      cost.stop_ns = static_cast<double>(ProcessCpuNs() - stop0);
      const double samples =
          static_cast<double>(sampled1.samples - sampled0.samples);
      cost.samples = samples / kTimed;
      cost.events = std::max(0.0, written / kSteps - samples / kTimed);
      cost.recording_ns = cost.events * units.scope_ns;
      cost.accounted_ns = cost.profiler_ns + cost.recording_ns;
    } else if (kind > 0) {
      const int64_t stop0 = ProcessCpuNs();
      auto path = profiler::StopTrace();
      cost.stop_ns = static_cast<double>(ProcessCpuNs() - stop0);
      ok = ok && path.ok();
      const double samples =
          static_cast<double>(sampled1.samples - sampled0.samples);
      cost.samples = samples / kTimed;
      const double handler_ns = profiler::SamplingHandlerNs(sampled0, sampled1);
      cost.sampler_ns = (handler_ns + samples * units.signal_ns) / kTimed;
      if (samples > 0) {
        cost.handler_us = handler_ns / samples / 1000.0;
        const double fast =
            static_cast<double>(sampled1.fast_unwinds - sampled0.fast_unwinds);
        const double slow = static_cast<double>(sampled1.fallback_unwinds -
                                                sampled0.fallback_unwinds);
        cost.fast_share = fast + slow > 0 ? fast / (fast + slow) : 0;
      }
      // The file's events over the whole run (its first step too), less
      // the samples; the process counters the drain thread adds are few.
      auto reader =
          path.ok()
              ? trace_format::TraceReader::Open(*path)
              : absl::StatusOr<std::unique_ptr<trace_format::TraceReader>>(
                    path.status());
      ok = ok && reader.ok();
      if (reader.ok()) {
        const double events =
            static_cast<double>((*reader)->known_event_count());
        cost.events = std::max(0.0, events / kSteps - samples / kTimed);
        cost.recording_ns = cost.events * units.scope_ns;
      }
      cost.accounted_ns =
          cost.profiler_ns + cost.recording_ns + cost.sampler_ns;
    }
    return cost;
  };
  Pairs traced, sampled, remote;
  std::vector<double> plain_ms;
  const int pairs = EnvPairs();
  for (auto _ : state) {
    units = MeasureUnitCosts(dir);
    std::printf(
        "unit costs on this machine: a recorded scope %.1f ns, a delivered "
        "signal %.0f ns\n",
        units.scope_ns, units.signal_ns);
    state.counters["unit_scope_ns"] = units.scope_ns;
    state.counters["unit_signal_ns"] = units.signal_ns;
    run(0);  // compiles the step's graphs
    // The program's threads, before the server starts its own.
    for (const auto& [tid, t] : TakeCpuSnapshot().threads) {
      program_threads.insert(tid);
    }
    profiler::ServerOptions server_options;
    server_options.bind_address = "127.0.0.1";
    auto started = profiler::StartServer(0, server_options);
    if (started.ok()) {
      server = *std::move(started);
    } else {
      std::printf("no profiler server: %s\n",
                  started.status().ToString().c_str());
      ok = false;
    }
    run(1);        // warms the capture's first use
    run(kRemote);  // and the server's
    // Quadruplets: one run without a capture, one with the default
    // capture, one with sampling, one streamed to a remote client, in the
    // orders of a balanced Latin square in turn, so that neither order nor
    // drift favours one kind. The run without is each capture's pair
    // partner.
    static constexpr int kOrders[4][4] = {
        {0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}};
    for (int t = 0; t < pairs; ++t) {
      RunCost cost[4];
      for (int kind : kOrders[t % 4]) cost[kind] = run(kind);
      plain_ms.push_back(cost[0].wall_ns / 1e6);
      Add(traced, cost[0], cost[1]);
      Add(sampled, cost[0], cost[2]);
      Add(remote, cost[0], cost[kRemote]);
    }
    if (server) server->Stop();
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::filesystem::remove_all(remote_dir, ignored);
  if (!ok) {
    state.SkipWithError("a training step or the capture failed");
    return;
  }
  state.counters["median_step_ms"] = Quantile(plain_ms, 0.5);
  Report(state, "profiling overhead (default capture)", traced,
         "train.profiling_overhead_pct", "overhead_");
  Report(state, "profiling overhead (capture with sampling)", sampled,
         "train.profiling_overhead_sampling_pct", "sampling_overhead_");
  Report(state, "profiling overhead (remote capture, streamed)", remote,
         "train.profiling_overhead_remote_pct", "remote_overhead_");
}
BENCHMARK(BM_TrainStepOverheadPaired)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("train.profiling_overhead_pct", "%");
  RegisterHeadline("train.profiling_overhead_ci_low_pct", "%");
  RegisterHeadline("train.profiling_overhead_ci_high_pct", "%");
  RegisterHeadline("train.profiling_overhead_sampling_pct", "%");
  RegisterHeadline("train.profiling_overhead_sampling_ci_low_pct", "%");
  RegisterHeadline("train.profiling_overhead_sampling_ci_high_pct", "%");
  RegisterHeadline("train.profiling_overhead_remote_pct", "%");
  RegisterHeadline("train.profiling_overhead_remote_ci_low_pct", "%");
  RegisterHeadline("train.profiling_overhead_remote_ci_high_pct", "%");
  return true;
}();

}  // namespace
}  // namespace podscope::bench

PODSCOPE_BENCH_MAIN()
