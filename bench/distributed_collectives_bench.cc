// bench/run distributed, the collectives and data-parallel training part:
//
//   collectives.allreduce_ratio_vs_gloo  bus bandwidth of the runtime's
//       all-reduce (Communicator::AllReduce, f32 sum, 64 MB, 4 processes)
//       over Gloo's ring all-reduce called directly in the same processes
//       and run, alternating; the 4 B .. 64 MB curve goes to the log.
//   collectives.allreduce_busbw_gbps     the runtime's bus bandwidth there.
//   train.dp2_step_ms                    examples/train_mnist's step over two
//       processes (global batch 64, one device each, gradient all-reduce).
//   train.dp2_profiling_overhead_pct     the median over >= 10 interleaved
//       pairs (profiled / not, alternating which goes first) of the paired
//       step-time difference, in % of the unprofiled step; the spread
//       (quartiles) and the same median in process CPU time are counters
//       beside it.
//
// Workers are this binary re-executed ("--worker KIND") once per rank,
// meeting through a FileStore in a fresh temporary folder.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/headline.h"
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

extern char** environ;

namespace {

namespace rt = podscope::runtime;
namespace mnist = podscope::mnist;
namespace profiler = podscope::profiler;
using podscope::bench::RegisterHeadline;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * (v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (v[i + 1] - v[i]) * (pos - i);
}

// CPU seconds the process used so far (all threads, user and system).
double ProcessCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
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
  std::FILE* out =
      rank == 0 ? std::fopen((dir + "/allreduce.txt").c_str(), "w") : nullptr;
  for (int64_t bytes = 4; bytes <= (int64_t{64} << 20); bytes *= 16) {
    const int64_t n = bytes / 4;
    std::vector<float> a(n, 1.0f), b(n, 1.0f);
    const int reps = bytes >= (int64_t{4} << 20) ? 8 : 30;
    std::vector<double> ours, raw;
    // Each repetition times both, alternating which goes first, so that
    // neither always runs right after the barrier or on a warmer cache.
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
    for (int rep = 0; rep < reps + 1; ++rep) {  // the first is a warm-up
      std::optional<double> mine;
      double theirs = 0;
      if (rep % 2 == 0) {
        mine = time_ours();
        theirs = time_raw();
      } else {
        theirs = time_raw();
        mine = time_ours();
      }
      if (!mine) return 1;
      if (rep == 0) continue;
      ours.push_back(*mine);
      raw.push_back(theirs);
    }
    if (out != nullptr) {
      const double factor = 2.0 * (world - 1) / world;
      std::fprintf(out, "%lld %.6g %.6g\n", static_cast<long long>(bytes),
                   bytes * factor / Quantile(ours, 0.5) / 1e9,
                   bytes * factor / Quantile(raw, 0.5) / 1e9);
    }
  }
  if (out != nullptr) std::fclose(out);
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
  std::filesystem::remove_all(dir);
  if (!ok || rows == 0) {
    state.SkipWithError("an all-reduce worker failed");
    return;
  }
  state.counters["collectives.allreduce_ratio_vs_gloo"] = ratio;
  state.counters["collectives.allreduce_busbw_gbps"] = busbw;
}
BENCHMARK(BM_AllReduceVsGloo)->Iterations(1)->Unit(benchmark::kSecond);

// -------------------------------------------------------------- training

int TrainWorker() {
  constexpr int kGlobalBatch = 64;
  constexpr int kStepsPerRun = 2;
  constexpr int kPairs = 12;
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
  const mnist::Dataset data = mnist::FakeData(kGlobalBatch * 8, 7);
  std::vector<int> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<float> images;
  std::vector<int32_t> labels;
  const int shard = kGlobalBatch / world;
  int step = 0;
  bool ok = true;
  auto check = [&](const absl::Status& s, const char* what) {
    if (ok && !s.ok()) {
      std::fprintf(stderr, "rank %d: %s: %s\n", rank, what,
                   s.ToString().c_str());
      ok = false;
    }
  };
  const std::string trace_dir = dir + "/trace" + std::to_string(rank);
  double cpu = 0;  // of the last run, per step
  auto run = [&](bool profiled) {
    if (profiled) check(profiler::StartTrace(trace_dir), "StartTrace");
    // Both ranks start together: starting or stopping a capture takes a
    // different time on each, and the skew would land in the first step.
    check((*comm)->Barrier(), "Barrier");
    auto t0 = Clock::now();
    const double cpu0 = ProcessCpuSeconds();
    for (int i = 0; i < kStepsPerRun; ++i, ++step) {
      mnist::Gather(data, order, step * kGlobalBatch + rank * shard, shard,
                    &images, &labels);
      check((*trainer)->Step(images, labels), "Step");
    }
    check((*trainer)->LastLoss().status(), "LastLoss");
    const double seconds = Seconds(t0, Clock::now()) / kStepsPerRun;
    cpu = (ProcessCpuSeconds() - cpu0) / kStepsPerRun;
    if (profiled) check(profiler::StopTrace().status(), "StopTrace");
    return seconds;
  };
  run(false);  // compiles
  std::vector<double> plain, diff_pct, cpu_diff_pct;
  for (int pair = 0; pair < kPairs; ++pair) {
    double p, q, p_cpu, q_cpu;
    if (pair % 2 == 0) {
      p = run(false);
      p_cpu = cpu;
      q = run(true);
      q_cpu = cpu;
    } else {
      q = run(true);
      q_cpu = cpu;
      p = run(false);
      p_cpu = cpu;
    }
    plain.push_back(p);
    diff_pct.push_back((q - p) / p * 100.0);
    cpu_diff_pct.push_back((q_cpu - p_cpu) / p_cpu * 100.0);
  }
  if (!ok) return 1;
  if (rank == 0) {
    std::FILE* out = std::fopen((dir + "/train.txt").c_str(), "w");
    std::fprintf(out, "%.6g %.6g %.6g %.6g %.6g\n", Quantile(plain, 0.5) * 1e3,
                 Quantile(diff_pct, 0.5), Quantile(diff_pct, 0.25),
                 Quantile(diff_pct, 0.75), Quantile(cpu_diff_pct, 0.5));
    std::fclose(out);
  }
  return 0;
}

void BM_DataParallelTrainStep(benchmark::State& state) {
  const std::string dir = FreshDir("train");
  bool ok = true;
  for (auto _ : state) ok = RunWorkers("train", 2, dir);
  std::ifstream in(dir + "/train.txt");
  double step_ms = 0, median = 0, q25 = 0, q75 = 0, cpu_median = 0;
  const bool read =
      static_cast<bool>(in >> step_ms >> median >> q25 >> q75 >> cpu_median);
  std::filesystem::remove_all(dir);
  if (!ok || !read) {
    state.SkipWithError("a training worker failed");
    return;
  }
  std::printf(
      "dp2 profiling overhead: median %.2f %% (quartiles %.2f .. "
      "%.2f %%) over paired runs; in process CPU time: median %.2f %%\n",
      median, q25, q75, cpu_median);
  state.counters["train.dp2_step_ms"] = step_ms;
  state.counters["train.dp2_profiling_overhead_pct"] = median;
  state.counters["overhead_q25_pct"] = q25;
  state.counters["overhead_q75_pct"] = q75;
  // The process's CPU time (all threads, the capture's writer included):
  // steadier than wall time when other work shares the machine.
  state.counters["cpu_overhead_pct"] = cpu_median;
}
BENCHMARK(BM_DataParallelTrainStep)->Iterations(1)->Unit(benchmark::kSecond);

const bool kHeadlines = [] {
  RegisterHeadline("collectives.allreduce_ratio_vs_gloo", "x");
  RegisterHeadline("collectives.allreduce_busbw_gbps", "GB/s");
  RegisterHeadline("train.dp2_step_ms", "ms");
  RegisterHeadline("train.dp2_profiling_overhead_pct", "%");
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
