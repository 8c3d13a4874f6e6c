// `bench/run capture`: multi-worker captures with real worker processes.
//   capture.fanout64_wall_s       wall time of a 1 s capture of 64 local
//                                 workers (target <= 2 s)
//   capture.fanout64_over_duration  that wall time over the 1 s asked for
//   capture.fanout256_over_duration  wall time of a 1 s worker-side capture
//                                 of 256 workers over 1 s (<= 1.3): 256
//                                 profiler servers in 4 processes, each
//                                 recording a synthetic load of its own
//   capture.client_threads_256    the client's threads during it (<= 16)
//   capture.client_bytes_per_worker_event  bytes of messages the client
//                                 received per event the workers wrote
//                                 (<= 0.01)
//   capture.start_spread_us_256   spread of the 256 files' window starts in
//                                 true time (the workers share this
//                                 machine's clock) (<= 500)
//   capture.steps_window_exact    1 when every rank's file of a 4-rank
//                                 train_mnist job captured with --steps 5:7
//                                 holds exactly steps 5, 6 and 7, else 0
//   capture.stream_events_per_s   events per second through one streaming
//                                 capture of a worker recording flat out
//   clock.align_error_us          worst alignment error of marks recorded by
//                                 3 workers with clocks skewed by seconds and
//                                 ~100 ppm (in network namespaces when run as
//                                 root, else on loopback)
//   clock.stated_uncertainty_covers_pct  share of marks (3 skewed workers,
//                                 captures of 3 s with probes all through, on
//                                 loopback and in network namespaces when run
//                                 as root, each idle and with every core busy)
//                                 whose real error lies within the uncertainty
//                                 the file states there (target 100)
//   clock.uncertainty_over_error  the median of that stated uncertainty over
//                                 the real error (target <= 20)
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
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

// Threads of this process now.
int ThreadCount() {
  int n = 0;
  std::error_code e;
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/self/task", e)) {
    (void)t;
    ++n;
  }
  return n;
}

void BM_Fanout256WorkerWrites(benchmark::State& state) {
  // PODSCOPE_BENCH_POD_WORKERS tries fewer while developing; the figures
  // are for 256.
  const char* env = std::getenv("PODSCOPE_BENCH_POD_WORKERS");
  const int kWorkers = env != nullptr ? std::atoi(env) : 256;
  const char* lead_env = std::getenv("PODSCOPE_BENCH_POD_LEAD_MS");
  const int64_t lead_ms = lead_env != nullptr ? std::atoll(lead_env) : 200;
  // The workers are profiler servers, kProcesses processes serving an even
  // share each, every server recording a synthetic load of its own (5,000
  // scope pairs a second, synthetic_source.h): real servers and real gRPC,
  // and hundreds of them fit on two cores.
  const char* processes_env = std::getenv("PODSCOPE_BENCH_POD_PROCESSES");
  const int kProcesses = std::clamp(
      processes_env != nullptr ? std::atoi(processes_env) : 4, 1, kWorkers);
  const std::string shared = TempDir("pod");
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  for (int p = 0; p < kProcesses; ++p) {
    const int servers =
        kWorkers / kProcesses + (p < kWorkers % kProcesses ? 1 : 0);
    auto w = testing::StartServerProcess(
        PODSCOPE_CAPTURE_WORKER, servers,
        {"--rate_hz", "5000", "--capture_root", shared}, &addrs);
    if (w == nullptr) {
      state.SkipWithError("a worker process did not start its servers");
      return;
    }
    workers.push_back(std::move(w));
  }
  double wall_s = 0, spread_us = 0, bytes_per_event = 0;
  std::atomic<int> max_threads{0};
  int answered = 0;
  for (auto _ : state) {
    CaptureOptions o;
    o.workers = addrs;
    o.logdir = shared;
    o.session = "pod256";
    o.duration_ms = 1000;
    o.worker_writes = true;
    o.start_lead_ms = lead_ms;
    o.progress = [&](const CaptureProgress&) {
      max_threads = std::max(max_threads.load(), ThreadCount());
    };
    const int64_t t0 = MonotonicNs();
    auto result = CaptureWorkers(o);
    wall_s = static_cast<double>(MonotonicNs() - t0) / 1e9;
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    answered = result->answered();
    for (const WorkerResult& w : result->workers) {
      if (!w.ok) {
        std::fprintf(stderr, "%d of %d answered; first failure: %s\n", answered,
                     kWorkers, w.error.c_str());
        break;
      }
    }
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    uint64_t events = 0, received = 0;
    for (const WorkerResult& w : result->workers) {
      received += w.received_bytes;
      if (!w.ok || w.clock.empty()) continue;
      // Workers on one machine share CLOCK_MONOTONIC (no test skew here),
      // so the windows' starts on their own clocks are directly
      // comparable: their spread is the real one, made of the errors of
      // the probes each start was converted by.
      const int64_t start = w.window_start_ns;
      lo = std::min(lo, start);
      hi = std::max(hi, start);
      events += w.events;
    }
    spread_us = static_cast<double>(hi - lo) / 1e3;
    // Where the wall time went (the workers share this machine's clock):
    // reaching every worker until the common start, the window, and the
    // end from the last window's close to the capture's return.
    int64_t last_end = INT64_MIN;
    for (const WorkerResult& w : result->workers) {
      if (w.ok) last_end = std::max(last_end, w.window_end_ns);
    }
    if (lo != INT64_MAX) {
      std::fprintf(stderr,
                   "%d workers: common start %.0f ms after the call, window "
                   "%.0f ms, return %.0f ms after the last window closed\n",
                   kWorkers, (lo - t0) / 1e6, (last_end - lo) / 1e6,
                   (t0 + wall_s * 1e9 - last_end) / 1e6);
    }
    bytes_per_event = events == 0 ? 0 : static_cast<double>(received) / events;
  }
  state.counters["workers_answered"] = answered;
  state.counters["capture.fanout256_over_duration"] = wall_s / 1.0;
  state.counters["capture.client_threads_256"] = max_threads.load();
  state.counters["capture.client_bytes_per_worker_event"] = bytes_per_event;
  state.counters["capture.start_spread_us_256"] = spread_us;
  for (auto& w : workers) w->WriteLine("quit");
}
BENCHMARK(BM_Fanout256WorkerWrites)->Iterations(1)->Unit(benchmark::kSecond);

#if defined(PODSCOPE_BIN) && defined(PODSCOPE_TRAIN_MNIST)
// A 4-rank train_mnist job whose ranks write their own files, captured by
// steps: every rank's file must hold exactly steps 5, 6 and 7.
void BM_StepsWindowTrainMnist(benchmark::State& state) {
  double exact = 0;
  for (auto _ : state) {
    const std::string root = TempDir("steps");
    ChildProcess launcher({"env", "PODSCOPE_CAPTURE_ROOT=" + root, PODSCOPE_BIN,
                           "launch", "--nproc_per_node", "4",
                           PODSCOPE_TRAIN_MNIST, "--fake_data", "--steps", "14",
                           "--batch_size", "32", "--log_every", "100",
                           "--logdir", root + "/own"});
    const std::string mark = "connected (job coordinator ";
    std::string line, coordinator;
    while (coordinator.empty() && launcher.ReadLine(&line, 120000)) {
      const size_t at = line.find(mark);
      if (at == std::string::npos) continue;
      coordinator = line.substr(at + mark.size());
      coordinator = coordinator.substr(0, coordinator.find(')'));
    }
    if (coordinator.empty()) {
      state.SkipWithError("the job did not start");
      return;
    }
    ChildProcess capture({PODSCOPE_BIN, "capture", "--job", coordinator,
                          "--logdir", root, "--steps", "5:7", "--session",
                          "steps"});
    const int status = capture.Wait(180000);
    launcher.Wait(180000);
    int exact_files = 0, files = 0;
    std::error_code e;
    for (const auto& f : std::filesystem::directory_iterator(
             std::filesystem::path(root) / "steps", e)) {
      if (f.path().extension() != ".podtrace") continue;
      ++files;
      auto file = testing::ReadTraceFile(f.path().string());
      if (file.reader == nullptr) continue;
      std::vector<int64_t> steps;
      for (const auto& t : file.tracks) {
        for (uint32_t i = 0; i < t.events.slices.size(); ++i) {
          if (file.Name(t.events.slices[i].name) == "train_step") {
            steps.push_back(file.IntArg(t, i, "step"));
          }
        }
      }
      std::sort(steps.begin(), steps.end());
      if (steps == std::vector<int64_t>{5, 6, 7}) ++exact_files;
    }
    if (status != 0 || files != 4 || exact_files != 4) {
      std::fprintf(stderr,
                   "steps window: capture exit %d, %d files, %d exact\n",
                   status, files, exact_files);
    }
    exact = status == 0 && files == 4 && exact_files == 4 ? 1 : 0;
  }
  state.counters["capture.steps_window_exact"] = exact;
}
BENCHMARK(BM_StepsWindowTrainMnist)->Iterations(1)->Unit(benchmark::kSecond);
#endif

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

// Three workers with skewed, drifting clocks, in `hosts` when given (on
// port 9012 with a token), else on loopback; their addresses in `addrs`.
// False when one does not start.
bool StartSkewedWorkers(const testing::NetworkHosts* hosts,
                        std::vector<std::unique_ptr<ChildProcess>>* workers,
                        std::vector<std::string>* addrs) {
  const int64_t offsets[] = {3'000'000'000, -7'500'000'000, 12'250'000'000};
  const double drifts[] = {100, -100, 60};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> prefix;
    std::vector<std::string> args = {"--port", "0"};
    std::string host = "127.0.0.1";
    if (hosts != nullptr) {
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
    if (w == nullptr) return false;
    workers->push_back(std::move(w));
    addrs->push_back(host + ":" + std::to_string(port));
  }
  return true;
}

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
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  if (!StartSkewedWorkers(hosts.get(), &workers, &addrs)) {
    state.SkipWithError("a worker did not start");
    return;
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

// Every "sync_mark" of a captured file in order: where the file's clock
// puts it on the reference clock, and the uncertainty it states there.
struct StatedMark {
  int64_t aligned = 0;
  int64_t stated = 0;
};
std::vector<StatedMark> StatedMarks(const std::string& path) {
  testing::TraceFile file = testing::ReadTraceFile(path);
  std::vector<StatedMark> out;
  if (file.reader == nullptr) return out;
  const trace_format::ClockModel clock(file.reader->clock());
  std::vector<int64_t> local;
  for (const auto& t : file.tracks) {
    for (const auto& inst : t.events.instants) {
      if (file.Name(inst.name) == "sync_mark") local.push_back(inst.ts_ns);
    }
  }
  std::sort(local.begin(), local.end());
  for (const int64_t t : local) {
    out.push_back({clock.ToReference(t), clock.UncertaintyAt(t)});
  }
  return out;
}

// Busy loops on every core while it lives.
class Load {
 public:
  Load() {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        uint64_t x = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
          benchmark::DoNotOptimize(++x);
        }
      });
    }
  }
  ~Load() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

struct Honesty {
  int marks = 0;
  int covered = 0;
  std::vector<double> ratios;  // stated / real error
};

// One capture of 3 skewed workers (in `hosts` when given, else on
// loopback) marking 20 instants; adds what the files state to `h`.
bool MeasureHonesty(const testing::NetworkHosts* hosts, bool loaded, Honesty* h,
                    std::string* why) {
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  if (!StartSkewedWorkers(hosts, &workers, &addrs)) {
    *why = "a worker did not start";
    return false;
  }
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = TempDir(hosts != nullptr ? "honesty-netns" : "honesty");
  o.duration_ms = 3000;
  // Workers in namespaces serve with the token "bench"; on loopback, with
  // this user's token file (which the client then sends by itself).
  if (hosts != nullptr) o.connect.token = "bench";
  constexpr int kMarks = 20;
  std::vector<std::vector<testing::Mark>> marked;
  std::optional<Load> load;
  if (loaded) load.emplace();
  std::thread marker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    marked = testing::MarkInstants(workers, MonotonicNs() + 200'000'000, kMarks,
                                   100'000'000);
  });
  auto result = CaptureWorkers(o);
  marker.join();
  load.reset();
  for (auto& w : workers) w->WriteLine("quit");
  if (!result.ok() || result->answered() != 3) {
    *why = "the capture failed";
    if (!result.ok()) {
      *why += ": " + std::string(result.status().message());
    } else {
      for (const WorkerResult& w : result->workers) {
        if (!w.ok) *why += ": " + w.error;
      }
    }
    return false;
  }
  for (int i = 0; i < 3; ++i) {
    const std::vector<StatedMark> marks = StatedMarks(result->workers[i].path);
    for (size_t k = 0; k < marks.size() && k < kMarks; ++k) {
      const testing::Mark& m = marked[i][k];
      if (m.before == 0) continue;
      const int64_t outside = testing::AlignmentError(marks[k].aligned, m);
      const double mid = static_cast<double>(m.before) +
                         static_cast<double>(m.after - m.before) / 2;
      const double real =
          std::max(std::abs(static_cast<double>(marks[k].aligned) - mid), 1.0);
      h->marks += 1;
      if (outside <= marks[k].stated) h->covered += 1;
      h->ratios.push_back(static_cast<double>(marks[k].stated) / real);
    }
  }
  return true;
}

void BM_ClockHonesty(benchmark::State& state) {
  const bool netns = testing::CanMakeNamespaces();
  std::unique_ptr<testing::NetworkHosts> hosts;
  if (netns) {
    hosts = std::make_unique<testing::NetworkHosts>(3, "ch");
    if (!hosts->ok()) {
      state.SkipWithError("cannot set up network namespaces");
      return;
    }
  }
  Honesty h;
  // Loopback, and across network namespaces when they can be made.
  std::vector<const testing::NetworkHosts*> places = {nullptr};
  if (hosts) places.push_back(hosts.get());
  for (auto _ : state) {
    for (const testing::NetworkHosts* where : places) {
      for (const bool loaded : {false, true}) {
        std::string why;
        if (!MeasureHonesty(where, loaded, &h, &why)) {
          state.SkipWithError(why.c_str());
          return;
        }
      }
    }
  }
  std::sort(h.ratios.begin(), h.ratios.end());
  state.counters["marks"] = h.marks;
  state.counters["clock.stated_uncertainty_covers_pct"] =
      h.marks == 0 ? 0 : 100.0 * h.covered / h.marks;
  state.counters["clock.uncertainty_over_error"] =
      h.ratios.empty() ? 0 : h.ratios[h.ratios.size() / 2];
  state.counters["network_namespaces"] = netns ? 1 : 0;
}
BENCHMARK(BM_ClockHonesty)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace podscope::profiler

int main(int argc, char** argv) {
  podscope::bench::RegisterHeadline("capture.fanout64_wall_s", "s");
  podscope::bench::RegisterHeadline("capture.fanout64_over_duration", "ratio");
  podscope::bench::RegisterHeadline("capture.stream_events_per_s", "events/s");
  podscope::bench::RegisterHeadline("capture.fanout256_over_duration", "ratio");
  podscope::bench::RegisterHeadline("capture.client_threads_256", "threads");
  {
    using podscope::bench::RegisterHeadline;
    RegisterHeadline("capture.client_bytes_per_worker_event", "bytes");
  }
  podscope::bench::RegisterHeadline("capture.start_spread_us_256", "us");
  podscope::bench::RegisterHeadline("capture.steps_window_exact", "bool");
  podscope::bench::RegisterHeadline("clock.align_error_us", "us");
  podscope::bench::RegisterHeadline("clock.stated_uncertainty_covers_pct", "%");
  podscope::bench::RegisterHeadline("clock.uncertainty_over_error", "ratio");
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
