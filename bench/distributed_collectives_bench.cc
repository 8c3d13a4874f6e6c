// bench/run distributed, the collectives and data-parallel training part:
//
//   collectives.allreduce_ratio_vs_gloo  bus bandwidth of the runtime's
//       all-reduce (Communicator::AllReduce, f32 sum, 64 MB, 4 processes)
//       over Gloo's ring all-reduce called directly in the same processes
//       and run, alternating; the 4 B .. 64 MB curve goes to the log.
//   collectives.allreduce_busbw_gbps     the runtime's bus bandwidth there.
//   collectives.allreduce_small_latency_ratio  the runtime's all-reduce
//       latency over Gloo's ring called directly, for small messages (f32
//       sum of 4 B, 64 B, 1 KB and 4 KB, 4 processes, in the same processes
//       and run, alternating): the median latency of each over many
//       repetitions, and the geometric mean of the four sizes' ratios
//       (each size's is printed to the log).
//   train.dp2_step_ms                    examples/train_mnist's step over two
//       processes (a batch of 32 per process, one device each, gradient
//       all-reduce).
//   train.dp2_profiling_overhead_pct     what a default capture on every
//       rank costs that job, by the method of bench_runtime_overhead: the
//       capture's own work (the profiler's threads' CPU time, and the
//       events recorded times a scope's cost measured in each rank),
//       summed over both ranks, in % of both ranks' CPU time per step in
//       the run without, the median over 20 interleaved pairs of runs
//       (profiled / not, alternating which goes first); `_ci_low` /
//       `_ci_high` give its 95 % bootstrap interval. The pairs' difference
//       of the whole CPU time (every thread of both ranks) and of wall time
//       are printed beside it.
//
// Workers are this binary re-executed ("--worker KIND") once per rank,
// meeting through a FileStore in a fresh temporary folder.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/capture_costs.h"
#include "common/cpu_accounting.h"
#include "common/headline.h"
#include "common/paired_stats.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"
#include "mnist/data.h"
#include "mnist/trainer.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/collectives.h"
#include "podscope/runtime/file_store.h"
#include "podscope/runtime/pjrt/client.h"
#include "podscope/trace_format/reader.h"

extern char** environ;

namespace {

namespace rt = podscope::runtime;
namespace mnist = podscope::mnist;
namespace profiler = podscope::profiler;
using podscope::bench::BootstrapMedian;
using podscope::bench::CpuSnapshot;
using podscope::bench::CpuSplit;
using podscope::bench::MeasureUnitCosts;
using podscope::bench::Quantile;
using podscope::bench::RegisterHeadline;
using podscope::bench::SplitCpu;
using podscope::bench::TakeCpuSnapshot;
using podscope::bench::UnitCosts;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

// Runs `world` workers of `kind`; true when all exit 0.
bool RunWorkers(const std::string& kind, int world, const std::string& dir) {
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    env.push_back("RANK=" + std::to_string(rank));
    env.push_back("WORLD_SIZE=" + std::to_string(world));
    env.push_back("BENCH_DIR=" + dir);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", flag = "--worker", k = kind;
    char* argv[] = {exe.data(), flag.data(), k.data(), nullptr};
    pid_t pid = -1;
    if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()) !=
        0) {
      return false;
    }
    pids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

std::string FreshDir(const char* what) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podscope-bench-dist-" + std::to_string(getpid()) + "-" + what);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// ------------------------------------------------------------ all-reduce

int AllReduceWorker() {
  const int rank = EnvInt("RANK"), world = EnvInt("WORLD_SIZE");
  const std::string dir = std::getenv("BENCH_DIR");
  auto store = rt::OpenFileStore(dir + "/store");
  if (!store.ok()) return 1;
  auto comm = rt::Communicator::Create(**store, rank, world, "bench");
  if (!comm.ok()) {
    std::fprintf(stderr, "%s\n", comm.status().ToString().c_str());
    return 1;
  }
  // Raw Gloo: its own file store and context, the same ring algorithm.
  std::filesystem::create_directories(dir + "/gloo");
  gloo::rendezvous::FileStore gloo_store(dir + "/gloo");
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
  context->connectFullMesh(gloo_store, device);
  auto raw_barrier = [&] {
    gloo::BarrierOptions b(context);
    gloo::barrier(b);
  };
  // Times `reps` all-reduces of `bytes` through the runtime (`ours`) and
  // Gloo directly (`raw`). Each repetition times both, alternating which
  // goes first, so that neither always runs right after the barrier or on
  // a warmer cache; the first `warmup` repetitions are not kept.
  auto compare = [&](int64_t bytes, int warmup, int reps,
                     std::vector<double>* ours, std::vector<double>* raw) {
    const int64_t n = bytes / 4;
    std::vector<float> a(n, 1.0f), b(n, 1.0f);
    auto time_ours = [&]() -> std::optional<double> {
      raw_barrier();
      const auto t0 = Clock::now();
      if (!(*comm)->AllReduce(absl::MakeSpan(a), rt::ReduceOp::kSum).ok()) {
        return std::nullopt;
      }
      return Seconds(t0, Clock::now());
    };
    auto time_raw = [&] {
      raw_barrier();
      const auto t0 = Clock::now();
      gloo::AllreduceOptions opts(context);
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      opts.setOutput(b.data(), n);
      opts.setReduceFunction(
          [](void* o, const void* x, const void* y, size_t k) {
            float* out = static_cast<float*>(o);
            const float* p = static_cast<const float*>(x);
            const float* q = static_cast<const float*>(y);
            for (size_t i = 0; i < k; ++i) out[i] = p[i] + q[i];
          });
      gloo::allreduce(opts);
      return Seconds(t0, Clock::now());
    };
    for (int rep = 0; rep < warmup + reps; ++rep) {
      std::optional<double> mine;
      double theirs = 0;
      if (rep % 2 == 0) {
        mine = time_ours();
        theirs = time_raw();
      } else {
        theirs = time_raw();
        mine = time_ours();
      }
      if (!mine) return false;
      if (rep < warmup) continue;
      ours->push_back(*mine);
      raw->push_back(theirs);
    }
    return true;
  };
  std::FILE* out =
      rank == 0 ? std::fopen((dir + "/allreduce.txt").c_str(), "w") : nullptr;
  for (int64_t bytes = 4; bytes <= (int64_t{64} << 20); bytes *= 16) {
    std::vector<double> ours, raw;
    if (!compare(bytes, 1, bytes >= (int64_t{4} << 20) ? 8 : 30, &ours, &raw)) {
      return 1;
    }
    if (out != nullptr) {
      const double factor = 2.0 * (world - 1) / world;
      std::fprintf(out, "%lld %.6g %.6g\n", static_cast<long long>(bytes),
                   bytes * factor / Quantile(ours, 0.5) / 1e9,
                   bytes * factor / Quantile(raw, 0.5) / 1e9);
    }
  }
  if (out != nullptr) std::fclose(out);
  // Small messages: latency, over enough repetitions that the median
  // stands above the machine's noise.
  std::FILE* lat =
      rank == 0 ? std::fopen((dir + "/latency.txt").c_str(), "w") : nullptr;
  for (int64_t bytes : {4, 64, 1024, 4096}) {
    std::vector<double> ours, raw;
    if (!compare(bytes, 20, 300, &ours, &raw)) return 1;
    if (lat != nullptr) {
      std::fprintf(lat, "%lld %.6g %.6g\n", static_cast<long long>(bytes),
                   Quantile(ours, 0.5) * 1e6, Quantile(raw, 0.5) * 1e6);
    }
  }
  if (lat != nullptr) std::fclose(lat);
  return 0;
}

void BM_AllReduceVsGloo(benchmark::State& state) {
  const std::string dir = FreshDir("allreduce");
  bool ok = true;
  for (auto _ : state) ok = RunWorkers("allreduce", 4, dir);
  std::ifstream in(dir + "/allreduce.txt");
  long long bytes = 0;
  double ours = 0, raw = 0, ratio = 0, busbw = 0;
  int rows = 0;
  while (in >> bytes >> ours >> raw) {
    ++rows;
    std::printf(
        "allreduce curve: %10lld B  runtime %8.3f GB/s  gloo %8.3f "
        "GB/s  ratio %.3f\n",
        bytes, ours, raw, ours / raw);
    ratio = ours / raw;
    busbw = ours;
  }
  std::ifstream lat(dir + "/latency.txt");
  double ours_us = 0, raw_us = 0, log_latency_ratios = 0;
  int latency_rows = 0;
  while (lat >> bytes >> ours_us >> raw_us) {
    ++latency_rows;
    std::printf(
        "allreduce latency: %10lld B  runtime %8.1f us  gloo %8.1f us  "
        "ratio %.3f\n",
        bytes, ours_us, raw_us, ours_us / raw_us);
    log_latency_ratios += std::log(ours_us / raw_us);
  }
  std::filesystem::remove_all(dir);
  if (!ok || rows == 0 || latency_rows == 0) {
    state.SkipWithError("an all-reduce worker failed");
    return;
  }
  state.counters["collectives.allreduce_ratio_vs_gloo"] = ratio;
  state.counters["collectives.allreduce_busbw_gbps"] = busbw;
  state.counters["collectives.allreduce_small_latency_ratio"] =
      std::exp(log_latency_ratios / latency_rows);
}
BENCHMARK(BM_AllReduceVsGloo)->Iterations(1)->Unit(benchmark::kSecond);

// -------------------------------------------------------------- training

// Steps per run (the first not timed) and pairs of runs.
constexpr int kTrainSteps = 21;
constexpr int kTrainPairs = 20;

// Each rank writes one line per run: "PROFILED CPU_NS WALL_NS", per timed
// step; the parent adds the ranks' CPU times of each run.
int TrainWorker() {
  constexpr int kBatch = 32;  // per process
  const int rank = EnvInt("RANK"), world = EnvInt("WORLD_SIZE");
  const std::string dir = std::getenv("BENCH_DIR");
  auto store = rt::OpenFileStore(dir + "/store");
  if (!store.ok()) return 1;
  auto comm = rt::Communicator::Create(**store, rank, world, "train");
  if (!comm.ok()) return 1;
  auto client = rt::CreateClient(rt::ClientOptions());
  if (!client.ok()) return 1;
  mnist::TrainerOptions options;
  options.communicator = comm->get();
  auto trainer = mnist::Trainer::Create(
      client->get(), {(*client)->addressable_devices()[0]}, options);
  if (!trainer.ok()) return 1;
  const mnist::Dataset data = mnist::FakeData(kBatch * world * 8, 7);
  std::vector<int> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> images;
  std::vector<int32_t> labels;
  int step = 0;
  bool ok = true;
  auto check = [&](const absl::Status& s, const char* what) {
    if (ok && !s.ok()) {
      std::fprintf(stderr, "rank %d: %s: %s\n", rank, what,
                   s.ToString().c_str());
      ok = false;
    }
  };
  auto one_step = [&] {
    mnist::Gather(data, order, ((step % 8) * world + rank) * kBatch, kBatch,
                  &images, &labels);
    check((*trainer)->Step(images, labels), "Step");
    ++step;
  };
  const std::string trace_dir = dir + "/trace" + std::to_string(rank);
  std::FILE* out = std::fopen(
      (dir + "/train-" + std::to_string(rank) + ".txt").c_str(), "w");
  if (out == nullptr) return 1;
  // What a recorded scope costs this rank, for counting the capture's own
  // work (bench/overhead_bench.cc's method).
  const UnitCosts units = MeasureUnitCosts(trace_dir + "-units");
  auto run = [&](bool profiled) {
    if (profiled) check(profiler::StartTrace(trace_dir), "StartTrace");
    // Both ranks start together: starting or stopping a capture takes a
    // different time on each, and the skew would land in the first step.
    check((*comm)->Barrier(), "Barrier");
    one_step();
    check((*trainer)->LastLoss().status(), "LastLoss");
    const CpuSnapshot before = TakeCpuSnapshot();
    const auto t0 = Clock::now();
    for (int i = 1; i < kTrainSteps; ++i) one_step();
    check((*trainer)->LastLoss().status(), "LastLoss");
    const double wall_ns = Seconds(t0, Clock::now()) * 1e9;
    const CpuSplit split = SplitCpu(before, TakeCpuSnapshot());
    const auto cpu_ns = static_cast<double>(split.process_ns);
    // The capture's own work: the profiler's threads, and the events
    // recorded (the file's, over the whole run) times a scope's cost.
    double accounted_ns = static_cast<double>(split.profiler_ns);
    if (profiled) {
      auto path = profiler::StopTrace();
      check(path.status(), "StopTrace");
      if (path.ok()) {
        auto reader = podscope::trace_format::TraceReader::Open(*path);
        check(reader.status(), "reading the trace");
        if (reader.ok()) {
          accounted_ns += static_cast<double>((*reader)->known_event_count()) *
                          (kTrainSteps - 1) / kTrainSteps * units.scope_ns;
        }
      }
    }
    std::fprintf(out, "%d %.9g %.9g %.9g\n", profiled ? 1 : 0,
                 cpu_ns / (kTrainSteps - 1), wall_ns / (kTrainSteps - 1),
                 accounted_ns / (kTrainSteps - 1));
  };
  run(false);  // compiles
  for (int pair = 0; pair < kTrainPairs; ++pair) {
    run(pair % 2 != 0);
    run(pair % 2 == 0);
  }
  std::fclose(out);
  return ok ? 0 : 1;
}

// One run as both ranks saw it: CPU summed, wall time the slower rank's.
struct TrainRun {
  bool profiled = false;
  double cpu_ns = 0;
  double wall_ns = 0;
  double accounted_ns = 0;  // the capture's own work, both ranks
};

bool ReadTrainRuns(const std::string& dir, int world,
                   std::vector<TrainRun>* runs) {
  for (int r = 0; r < world; ++r) {
    std::ifstream in(dir + "/train-" + std::to_string(r) + ".txt");
    size_t i = 0;
    int profiled;
    double cpu, wall, accounted;
    while (in >> profiled >> cpu >> wall >> accounted) {
      if (r == 0) runs->push_back({profiled != 0, 0, 0, 0});
      if (i >= runs->size() || (*runs)[i].profiled != (profiled != 0)) {
        return false;
      }
      (*runs)[i].cpu_ns += cpu;
      (*runs)[i].accounted_ns += accounted;
      (*runs)[i].wall_ns = std::max((*runs)[i].wall_ns, wall);
      ++i;
    }
    if (i != runs->size()) return false;
  }
  return runs->size() == 1 + 2 * kTrainPairs;
}

void BM_DataParallelTrainStep(benchmark::State& state) {
  const std::string dir = FreshDir("train");
  bool ok = true;
  for (auto _ : state) ok = RunWorkers("train", 2, dir);
  std::vector<TrainRun> runs;
  ok = ok && ReadTrainRuns(dir, 2, &runs);
  std::filesystem::remove_all(dir);
  if (!ok) {
    state.SkipWithError("a training worker failed");
    return;
  }
  std::vector<double> plain_ms, accounted_pct, cpu_pct, wall_pct;
  for (size_t i = 1; i + 1 < runs.size(); i += 2) {  // runs[0] compiled
    const TrainRun& p = runs[i].profiled ? runs[i + 1] : runs[i];
    const TrainRun& q = runs[i].profiled ? runs[i] : runs[i + 1];
    plain_ms.push_back(p.wall_ns / 1e6);
    accounted_pct.push_back(q.accounted_ns / p.cpu_ns * 100.0);
    cpu_pct.push_back((q.cpu_ns / p.cpu_ns - 1.0) * 100.0);
    wall_pct.push_back((q.wall_ns / p.wall_ns - 1.0) * 100.0);
  }
  const auto accounted = BootstrapMedian(accounted_pct);
  const auto cpu = BootstrapMedian(cpu_pct);
  const auto wall = BootstrapMedian(wall_pct);
  std::printf(
      "dp2 profiling overhead, %zu interleaved pairs of %d-step runs: the "
      "capture's own work %+.2f %% of both ranks' CPU time (95 %% CI %+.2f "
      ".. %+.2f); the whole CPU time paired %+.2f %% (95 %% CI %+.2f .. "
      "%+.2f); wall time %+.2f %% (95 %% CI %+.2f .. %+.2f)\n",
      cpu_pct.size(), kTrainSteps - 1, accounted.median, accounted.low,
      accounted.high, cpu.median, cpu.low, cpu.high, wall.median, wall.low,
      wall.high);
  state.counters["train.dp2_step_ms"] = Quantile(plain_ms, 0.5);
  state.counters["train.dp2_profiling_overhead_pct"] = accounted.median;
  state.counters["train.dp2_profiling_overhead_ci_low_pct"] = accounted.low;
  state.counters["train.dp2_profiling_overhead_ci_high_pct"] = accounted.high;
  state.counters["paired_overhead_pct"] = cpu.median;
  state.counters["paired_overhead_ci_low_pct"] = cpu.low;
  state.counters["paired_overhead_ci_high_pct"] = cpu.high;
  state.counters["wall_overhead_pct"] = wall.median;
  state.counters["wall_overhead_ci_low_pct"] = wall.low;
  state.counters["wall_overhead_ci_high_pct"] = wall.high;
}
BENCHMARK(BM_DataParallelTrainStep)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("collectives.allreduce_ratio_vs_gloo", "x");
  RegisterHeadline("collectives.allreduce_busbw_gbps", "GB/s");
  RegisterHeadline("collectives.allreduce_small_latency_ratio", "x");
  RegisterHeadline("train.dp2_step_ms", "ms");
  RegisterHeadline("train.dp2_profiling_overhead_pct", "%");
  RegisterHeadline("train.dp2_profiling_overhead_ci_low_pct", "%");
  RegisterHeadline("train.dp2_profiling_overhead_ci_high_pct", "%");
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--worker") {
    try {
      const std::string kind = argv[2];
      if (kind == "allreduce") return AllReduceWorker();
      if (kind == "train") return TrainWorker();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "worker: %s\n", e.what());
      return 1;
    }
    return 2;
  }
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
