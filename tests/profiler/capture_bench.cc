// `bench/run capture`: multi-worker captures with real worker processes.
//   capture.fanout64_wall_s       wall time of a 1 s capture of 64 local
//                                 workers (target <= 2 s)
//   capture.fanout64_over_duration  that wall time over the 1 s asked for
//   capture.stream_events_per_s   events per second through one streaming
//                                 capture of a worker recording flat out
//   clock.align_error_us          worst alignment error of marks recorded by
//                                 3 workers with clocks skewed by seconds and
//                                 ~100 ppm (in network namespaces when run as
//                                 root, else on loopback)
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "child_process.h"
#include "common/headline.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "skewed_hosts.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

using testing::ChildProcess;

std::unique_ptr<ChildProcess> StartWorker(
    const std::vector<std::string>& prefix,
    const std::vector<std::string>& args, const std::vector<std::string>& env,
    int* port) {
  return testing::StartCaptureWorker(PODSCOPE_CAPTURE_WORKER, prefix, args, env,
                                     port);
}

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podscope-capture-bench-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void BM_Fanout64(benchmark::State& state) {
  constexpr int kWorkers = 64;
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  for (int i = 0; i < kWorkers; ++i) {
    int port = 0;
    auto w = StartWorker({}, {"--port", "0", "--rate_hz", "200"}, {}, &port);
    if (w == nullptr) {
      state.SkipWithError("a worker did not start");
      return;
    }
    workers.push_back(std::move(w));
    addrs.push_back("127.0.0.1:" + std::to_string(port));
  }
  double wall_s = 0;
  int answered = 0;
  for (auto _ : state) {
    CaptureOptions o;
    o.workers = addrs;
    o.logdir = TempDir("fanout");
    o.duration_ms = 1000;
    const int64_t t0 = MonotonicNs();
    auto result = CaptureWorkers(o);
    wall_s = static_cast<double>(MonotonicNs() - t0) / 1e9;
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    answered = result->answered();
  }
  state.counters["workers_answered"] = answered;
  state.counters["capture.fanout64_wall_s"] = wall_s;
  state.counters["capture.fanout64_over_duration"] = wall_s / 1.0;
  for (auto& w : workers) w->WriteLine("quit");
}
BENCHMARK(BM_Fanout64)->Iterations(1)->Unit(benchmark::kSecond);

void BM_StreamRate(benchmark::State& state) {
  int port = 0;
  auto worker = StartWorker({}, {"--port", "0", "--rate_hz", "0"}, {}, &port);
  if (worker == nullptr) {
    state.SkipWithError("the worker did not start");
    return;
  }
  double rate = 0, dropped = 0;
  for (auto _ : state) {
    CaptureOptions o;
    o.workers = {"127.0.0.1:" + std::to_string(port)};
    o.logdir = TempDir("stream");
    o.duration_ms = 2000;
    auto result = CaptureWorkers(o);
    if (!result.ok() || result->answered() != 1) {
      state.SkipWithError("the capture failed");
      return;
    }
    // Count what arrived in the file, not what the server said.
    auto file = testing::ReadTraceFile(result->workers[0].path);
    uint64_t events = 0;
    for (const auto& t : file.tracks) {
      events += t.events.slices.size() + t.events.instants.size() +
                t.events.counters.size();
    }
    rate = static_cast<double>(events) / 2.0;
    dropped = static_cast<double>(result->workers[0].dropped);
  }
  state.counters["capture.stream_events_per_s"] = rate;
  state.counters["events_dropped"] = dropped;
  worker->WriteLine("quit");
}
BENCHMARK(BM_StreamRate)->Iterations(1)->Unit(benchmark::kSecond);

void BM_AlignError(benchmark::State& state) {
  const bool netns = testing::CanMakeNamespaces();
  std::unique_ptr<testing::NetworkHosts> hosts;
  if (netns) {
    hosts = std::make_unique<testing::NetworkHosts>(3, "cb");
    if (!hosts->ok()) {
      state.SkipWithError("cannot set up network namespaces");
      return;
    }
  }
  const int64_t offsets[] = {3'000'000'000, -7'500'000'000, 12'250'000'000};
  const double drifts[] = {100, -100, 60};
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> prefix;
    std::vector<std::string> args = {"--port", "0"};
    std::string host = "127.0.0.1";
    if (netns) {
      prefix = {"ip", "netns", "exec", hosts->name(i)};
      host = hosts->address(i);
      args = {"--port", "9012", "--bind", host, "--token", "bench"};
    }
    int port = 0;
    auto w = StartWorker(
        prefix, args,
        {"PODSCOPE_TEST_CLOCK_OFFSET_NS=" + std::to_string(offsets[i]),
         "PODSCOPE_TEST_CLOCK_DRIFT_PPM=" + std::to_string(drifts[i])},
        &port);
    if (w == nullptr) {
      state.SkipWithError("a worker did not start");
      return;
    }
    workers.push_back(std::move(w));
    addrs.push_back(host + ":" + std::to_string(port));
  }
  double worst_us = 0;
  for (auto _ : state) {
    CaptureOptions o;
    o.workers = addrs;
    o.logdir = TempDir("align");
    o.duration_ms = 2000;
    o.connect.token = "bench";
    constexpr int kMarks = 5;
    std::vector<std::vector<testing::Mark>> marked;
    std::thread marker([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
      marked = testing::MarkInstants(workers, MonotonicNs() + 200'000'000,
                                     kMarks, 200'000'000);
    });
    auto result = CaptureWorkers(o);
    marker.join();
    if (!result.ok() || result->answered() != 3) {
      state.SkipWithError("the capture failed");
      return;
    }
    for (int i = 0; i < 3; ++i) {
      const std::vector<int64_t> aligned =
          testing::AlignedMarks(result->workers[i].path);
      for (size_t k = 0; k < aligned.size() && k < kMarks; ++k) {
        const int64_t err = testing::AlignmentError(aligned[k], marked[i][k]);
        worst_us = std::max(worst_us, static_cast<double>(err) / 1e3);
      }
    }
  }
  state.counters["clock.align_error_us"] = worst_us;
  state.counters["network_namespaces"] = netns ? 1 : 0;
  for (auto& w : workers) w->WriteLine("quit");
}
BENCHMARK(BM_AlignError)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace podscope::profiler

int main(int argc, char** argv) {
  podscope::bench::RegisterHeadline("capture.fanout64_wall_s", "s");
  podscope::bench::RegisterHeadline("capture.fanout64_over_duration", "ratio");
  podscope::bench::RegisterHeadline("capture.stream_events_per_s", "events/s");
  podscope::bench::RegisterHeadline("clock.align_error_us", "us");
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
