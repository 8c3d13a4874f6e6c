// The live timeline's refresh: a file of ~10 M events (16 threads of nested
// step / op scopes) is followed, then grows by ~100 k events at a time;
// each refresh (TraceFollower::Refresh) is timed, and so is loading those
// ~100 k events alone (TraceStore::Open of a file holding only them).
// Headlines:
//   viewer.live_refresh_ms        the median refresh appending ~100 k events
//   viewer.live_load_100k_ms      loading ~100 k events alone, median
//   viewer.live_refresh_ratio     the first over the second
//   viewer.live_refresh_cpu_ratio the same ratio of process CPU time (all
//                                 threads), steadier on a shared machine
// `--live_events=N` changes the store's size (default 10 M).
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "podscope/trace_format/writer.h"
#include "podscope/viewer/trace_follower.h"
#include "podscope/viewer/trace_store.h"
#include "trace_gen.h"

namespace {

namespace fs = std::filesystem;
namespace tf = podscope::trace_format;
using podscope::viewer::TraceFollower;
using podscope::viewer::TraceStore;

constexpr int kThreads = 16;
constexpr uint64_t kBatch = 100'000;

// A recorder's file: per thread, steps of 4 ops each (5 events a step).
class Recorder {
 public:
  explicit Recorder(const std::string& path) {
    writer_ = *tf::TraceWriter::Create(path);
    tf::proto::Metadata m;
    m.set_host("bench");
    m.set_pid(1);
    writer_->SetMetadata(m);
    for (int t = 0; t < kThreads; ++t) {
      tf::proto::Track track;
      track.set_kind(tf::proto::TRACK_KIND_THREAD);
      track.set_name("thread " + std::to_string(t));
      track.set_tid(t + 1);
      tracks_.push_back(writer_->AddTrack(track));
    }
    for (const char* n : {"step", "forward", "backward", "matmul", "send"}) {
      names_.push_back(writer_->InternString(n));
    }
  }
  // About `events` more events, in end order (children first).
  void Record(uint64_t events) {
    const uint64_t steps = events / (5 * kThreads);
    for (uint64_t s = 0; s < steps; ++s) {
      for (int t = 0; t < kThreads; ++t) {
        const int64_t start = now_ + t * 13;
        for (int op = 0; op < 4; ++op) {
          writer_->AddSlice(tracks_[t], start + 10 + op * 250, 200,
                            names_[1 + op]);
        }
        writer_->AddSlice(tracks_[t], start, 1100, names_[0]);
      }
      now_ += 1200;
    }
    (void)writer_->Flush();
  }
  void Close() { (void)writer_->Close(); }

 private:
  std::unique_ptr<tf::TraceWriter> writer_;
  std::vector<uint32_t> tracks_;
  std::vector<uint32_t> names_;
  int64_t now_ = 1'000'000;
};

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// CPU time of every thread of the process, ms.
double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

uint64_t g_events = 10'000'000;
double g_refresh_ms = 0;
double g_load_ms = 0;
double g_refresh_cpu_ms = 0;
double g_load_cpu_ms = 0;

void BM_LiveRefresh(benchmark::State& state) {
  const std::string dir =
      podscope::viewer::testing::TempDir("viewer_live_bench");
  Recorder recorder(dir + "/bench.1.podtrace");
  recorder.Record(g_events);
  TraceFollower follower(dir);
  if (!follower.Refresh().ok()) {
    state.SkipWithError("the first refresh failed");
    return;
  }
  std::vector<double> times, cpu;
  uint64_t appended = 0;
  for (auto _ : state) {
    state.PauseTiming();
    recorder.Record(kBatch);
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    const double cpu0 = CpuMs();
    auto update = follower.Refresh();
    cpu.push_back(CpuMs() - cpu0);
    times.push_back(Ms(std::chrono::steady_clock::now() - start));
    if (!update.ok()) {
      state.SkipWithError("refresh failed");
      return;
    }
    appended = update->events_added;
  }
  recorder.Close();
  g_refresh_ms = Median(times);
  g_refresh_cpu_ms = Median(cpu);
  state.counters["store_events"] =
      static_cast<double>(follower.store()->event_count());
  state.counters["appended"] = static_cast<double>(appended);
  state.counters["median_ms"] = g_refresh_ms;
}
BENCHMARK(BM_LiveRefresh)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_LoadBatchAlone(benchmark::State& state) {
  const std::string dir =
      podscope::viewer::testing::TempDir("viewer_live_bench_alone");
  {
    Recorder recorder(dir + "/bench.1.podtrace");
    recorder.Record(kBatch);
    recorder.Close();
  }
  std::vector<double> times, cpu;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu0 = CpuMs();
    auto store = TraceStore::Open(dir);
    cpu.push_back(CpuMs() - cpu0);
    times.push_back(Ms(std::chrono::steady_clock::now() - start));
    if (!store.ok()) {
      state.SkipWithError("open failed");
      return;
    }
    benchmark::DoNotOptimize((*store)->event_count());
  }
  g_load_ms = Median(times);
  g_load_cpu_ms = Median(cpu);
  state.counters["median_ms"] = g_load_ms;
}
BENCHMARK(BM_LoadBatchAlone)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--live_events=", 14) == 0) {
      g_events = std::strtoull(argv[i] + 14, nullptr, 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("viewer.live_refresh_ms %.3f ms\n", g_refresh_ms);
  std::printf("viewer.live_load_100k_ms %.3f ms\n", g_load_ms);
  std::printf("viewer.live_refresh_ratio %.2f x\n",
              g_load_ms > 0 ? g_refresh_ms / g_load_ms : 0.0);
  std::printf("viewer.live_refresh_cpu_ms %.3f ms\n", g_refresh_cpu_ms);
  std::printf("viewer.live_load_100k_cpu_ms %.3f ms\n", g_load_cpu_ms);
  std::printf("viewer.live_refresh_cpu_ratio %.2f x\n",
              g_load_cpu_ms > 0 ? g_refresh_cpu_ms / g_load_cpu_ms : 0.0);
  return 0;
}
