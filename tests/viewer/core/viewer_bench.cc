// viewer/core benchmark: open a generated 16-host capture, then LOD
// queries at three zoom levels. Prints the headline figures
//   viewer.open_s, viewer.bytes_per_event, viewer.query_ms_max
// after the Google Benchmark output. `--viewer_events=N` picks the capture
// size (default 100 M; 10 M for a quick run); captures are cached in
// $TMPDIR/podscope_viewer_bench_<N>.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "podscope/trace_format/writer.h"
#include "podscope/viewer/lod.h"
#include "podscope/viewer/trace_store.h"

namespace {

namespace fs = std::filesystem;
namespace tf = podscope::trace_format;
using podscope::viewer::TraceStore;

constexpr int kFiles = 16;
constexpr int kThreadsPerFile = 4;

// One training-like step per iteration: step > 8 layers > 4 ops > 2
// kernels, 105 nested slices, on each of the file's threads.
absl::Status WriteHostFile(const std::string& path, int file, uint64_t events) {
  tf::WriterOptions options;
  options.compression_level = 1;
  auto w_or = tf::TraceWriter::Create(path, options);
  if (!w_or.ok()) return w_or.status();
  tf::TraceWriter& w = **w_or;
  tf::proto::Metadata m;
  m.set_host("host" + std::to_string(file));
  m.set_pid(1000 + file);
  m.set_process_index(file);
  m.set_process_count(kFiles);
  w.SetMetadata(m);
  tf::proto::ClockOffset o;
  o.set_local_monotonic_ns(0);
  o.set_offset_ns(file * 1'000'003);
  o.set_reference("bench");
  w.AddClockOffset(o);
  o.set_local_monotonic_ns(int64_t{100} << 30);
  o.set_offset_ns(file * 1'000'003 + file * 50);
  w.AddClockOffset(o);
  const uint32_t step = w.InternString("train_step");
  std::vector<uint32_t> layer, op, kernel;
  for (int i = 0; i < 8; ++i)
    layer.push_back(w.InternString("layer" + std::to_string(i)));
  for (int i = 0; i < 4; ++i)
    op.push_back(w.InternString("op" + std::to_string(i)));
  for (int i = 0; i < 2; ++i)
    kernel.push_back(w.InternString("kernel" + std::to_string(i)));
  std::vector<uint32_t> tracks;
  for (int t = 0; t < kThreadsPerFile; ++t) {
    tf::proto::Track track;
    track.set_kind(tf::proto::TRACK_KIND_THREAD);
    track.set_name("worker " + std::to_string(t));
    tracks.push_back(w.AddTrack(track));
  }
  uint64_t x = 88172645463325252ull + file;
  auto jitter = [&](int64_t range) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return static_cast<int64_t>(x % static_cast<uint64_t>(range));
  };
  const uint64_t per_track = events / kThreadsPerFile;
  for (int t = 0; t < kThreadsPerFile; ++t) {
    int64_t now = 1'000'000 + t * 977;
    for (uint64_t done = 0; done + 105 <= per_track; done += 105) {
      const int64_t step_start = now;
      now += 500 + jitter(200);
      for (int l = 0; l < 8; ++l) {
        const int64_t layer_start = now;
        now += 100 + jitter(50);
        for (int k = 0; k < 4; ++k) {
          const int64_t op_start = now;
          now += 50 + jitter(20);
          for (int g = 0; g < 2; ++g) {
            const int64_t d = 200 + jitter(3000);
            w.AddSlice(tracks[t], now, d, kernel[g]);
            now += d + 20 + jitter(30);
          }
          w.AddSlice(tracks[t], op_start, now - op_start, op[k]);
          now += 30;
        }
        w.AddSlice(tracks[t], layer_start, now - layer_start, layer[l]);
        now += 40 + jitter(100);
      }
      w.AddSlice(tracks[t], step_start, now - step_start, step);
      now += 1000 + jitter(200'000);
    }
  }
  return w.Close();
}

std::string EnsureCapture(uint64_t events) {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp ? tmp : "/tmp") /
                       ("podscope_viewer_bench_" + std::to_string(events)) /
                       "session";
  if (fs::exists(dir / "complete")) return dir.string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::fprintf(stderr, "generating %llu events in %s ...\n",
               static_cast<unsigned long long>(events), dir.c_str());
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  auto work = [&] {
    for (int f; (f = next.fetch_add(1)) < kFiles;) {
      const auto path = dir / ("host" + std::to_string(f) + "." +
                               std::to_string(1000 + f) + ".podtrace");
      if (!WriteHostFile(path.string(), f, events / kFiles).ok()) failed = true;
    }
  };
  std::thread other(work);
  work();
  other.join();
  if (failed) {
    std::fprintf(stderr, "could not write the capture\n");
    std::exit(1);
  }
  std::ofstream(dir / "complete") << "ok\n";
  return dir.string();
}

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

TraceStore* g_store = nullptr;
double g_query_ms_max = 0;

// One full redraw: every track's slices for the window at 1920 px.
void BM_Query(benchmark::State& state) {
  const int64_t first = g_store->first_ns(), last = g_store->last_ns();
  const int64_t span = (last - first) / state.range(0);
  const int64_t mid = first + (last - first) / 2;
  const int64_t t0 = state.range(0) == 1 ? first : mid - span / 2;
  const int64_t t1 = t0 + std::max<int64_t>(span, 1);
  size_t drawn = 0;
  double worst_ms = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    drawn = 0;
    for (podscope::viewer::TrackId t = 0; t < g_store->tracks().size(); ++t) {
      auto v = podscope::viewer::QuerySlices(*g_store, t, t0, t1, 1920);
      drawn += v.size();
      benchmark::DoNotOptimize(v.data());
    }
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    worst_ms = std::max(worst_ms, ms);
  }
  state.counters["slices_drawn"] = static_cast<double>(drawn);
  state.counters["worst_ms"] = worst_ms;
  g_query_ms_max = std::max(g_query_ms_max, worst_ms);
}
BENCHMARK(BM_Query)
    ->Arg(1)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 100'000'000;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--viewer_events=", 16) == 0) {
      events = std::strtoull(argv[i] + 16, nullptr, 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  const std::string dir = EnsureCapture(events);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  const size_t rss_before = ResidentBytes();
  const auto start = std::chrono::steady_clock::now();
  auto store = TraceStore::Open(dir);
  const double open_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!store.ok()) {
    std::fprintf(stderr, "open failed: %s\n",
                 std::string(store.status().message()).c_str());
    return 1;
  }
  const size_t rss_after = ResidentBytes();
  g_store = store->get();
  const double per_event = static_cast<double>(rss_after - rss_before) /
                           static_cast<double>(g_store->event_count());
  std::fprintf(stderr, "loaded %llu events, %zu tracks; columns %.2f B/event\n",
               static_cast<unsigned long long>(g_store->event_count()),
               g_store->tracks().size(),
               static_cast<double>(g_store->resident_bytes()) /
                   static_cast<double>(g_store->event_count()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::printf("viewer.open_s %.3f s\n", open_s);
  std::printf("viewer.bytes_per_event %.2f bytes/event\n", per_event);
  std::printf("viewer.query_ms_max %.3f ms\n", g_query_ms_max);
  return 0;
}
