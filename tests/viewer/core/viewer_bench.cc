// viewer/core benchmark: open a generated 16-host capture, then LOD
// queries at three zoom levels, then the pod analyses over the loaded
// store. Prints the headline figures
//   viewer.open_s, viewer.bytes_per_event, viewer.query_ms_max,
//   analyze.events_per_s (events of the store / AnalyzePod's wall time)
//   critical_path.events_per_s  events of the store / the time to find the
//                            critical path of every step
//   query.scan_events_per_s  `SELECT name, sum(dur) FROM slices GROUP BY
//                            name`: slices scanned per second
//   query.point_ms           one rank's slices in a 1 ms window
// after the Google Benchmark output. `--viewer_events=N` picks the capture
// size (default 100 M; 10 M for a quick run); captures are cached in
// $TMPDIR/podscope_viewer_bench_<N>.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bench_capture.h"
#include "podscope/base/numeric.h"
#include "podscope/viewer/critical_path.h"
#include "podscope/viewer/lod.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/session_query.h"
#include "podscope/viewer/trace_store.h"

namespace {

using podscope::viewer::TraceStore;

TraceStore* g_store = nullptr;
int g_critical_threads = 1;  // --critical_threads=N; 0: one per core
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
    } else if (std::strncmp(argv[i], "--critical_threads=", 19) == 0) {
      g_critical_threads = std::atoi(argv[i] + 19);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  const std::string dir = podscope::viewer::testing::EnsureBenchCapture(events);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  const size_t rss_before = podscope::viewer::testing::ResidentBytes();
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  auto store = TraceStore::Open(dir);
  const double open_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  // Beside the wall time, the CPU time of every thread: what a busy
  // machine does not move much.
  std::fprintf(stderr, "open: %.3f s of CPU, %.3f s wall\n",
               static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC,
               open_s);
  if (!store.ok()) {
    std::fprintf(stderr, "open failed: %s\n",
                 std::string(store.status().message()).c_str());
    return 1;
  }
  const size_t rss_after = podscope::viewer::testing::ResidentBytes();
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
  // The analyses `podscope analyze` prints, over the whole session: the
  // best of three passes.
  double analyze_s = 0;
  for (int pass = 0; pass < 3; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    podscope::viewer::PodAnalysis a = podscope::viewer::AnalyzePod(*g_store);
    benchmark::DoNotOptimize(a);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    analyze_s = pass == 0 ? s : std::min(analyze_s, s);
  }
  // The critical path of every step (`podscope analyze --critical_path`
  // for each), over the events of the store.
  double critical_s = 0;
  size_t critical_rows = 0;
  {
    const podscope::viewer::StepBreakdown steps =
        podscope::viewer::AnalyzeSteps(*g_store);
    const podscope::viewer::StragglerReport stragglers =
        podscope::viewer::AnalyzeStragglers(*g_store, steps);
    const auto t0 = std::chrono::steady_clock::now();
    // Each path dropped once made, as a per-step caller would.
    podscope::viewer::ForEachCriticalPath(
        *g_store, steps, stragglers, g_critical_threads,
        [](int, podscope::viewer::CriticalPath path) {
          benchmark::DoNotOptimize(path);
        });
    critical_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    critical_rows = steps.rows.size();
  }
  // SQL over the same session (`podscope query`): a scan of every slice
  // grouped by name (best of two), and one rank's slices in a 1 ms window
  // (median of five).
  auto query = podscope::viewer::SessionQuery::Create(*g_store);
  if (!query.ok()) return 1;
  uint64_t slices = 0;
  for (const auto& t : g_store->tracks()) {
    slices += g_store->data(t.id).slices.size();
  }
  auto run = [&](const std::string& sql) {
    std::vector<std::string> columns;
    uint64_t rows = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status s = (*query)->Run(
        sql, &columns, [&](const std::vector<podscope::viewer::QueryValue>&) {
          ++rows;
          return true;
        });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!s.ok())
      std::fprintf(stderr, "query failed: %s\n", s.ToString().c_str());
    return s.ok() ? seconds : -1.0;
  };
  double scan_s = 1e30;
  for (int pass = 0; pass < 2; ++pass) {
    scan_s = std::min(scan_s,
                      run("SELECT name, sum(dur) FROM slices GROUP BY name"));
  }
  if ((*query)->fast_path_runs() == 0) {
    std::fprintf(stderr, "query: the scan went through SQLite's row scan\n");
  }
  // The native path when it tests every slice (a dur condition), for
  // docs/analysis.md; not a headline.
  const double filtered_s =
      run("SELECT name, sum(dur) FROM slices WHERE dur > 1000 GROUP BY name");
  std::fprintf(stderr, "query: scan testing each slice's dur: %.0f slices/s\n",
               static_cast<double>(slices) / filtered_s);
  const int64_t middle =
      g_store->first_ns() + (g_store->last_ns() - g_store->first_ns()) / 2;
  std::vector<double> points;
  for (int pass = 0; pass < 5; ++pass) {
    const int64_t t = middle + pass * 1'000'000;
    points.push_back(run(
        "SELECT * FROM slices WHERE rank = 0 AND ts >= " + std::to_string(t) +
        " AND ts < " + std::to_string(t + 1'000'000)));
  }
  std::printf("viewer.open_s %.3f s\n", open_s);
  std::printf("viewer.bytes_per_event %.2f bytes/event\n", per_event);
  std::printf("viewer.query_ms_max %.3f ms\n", g_query_ms_max);
  std::printf("analyze.events_per_s %.0f events/s\n",
              static_cast<double>(g_store->event_count()) / analyze_s);
  std::fprintf(stderr, "critical paths of %zu steps in %.3f s\n", critical_rows,
               critical_s);
  std::printf(
      "critical_path.events_per_s %.0f events/s\n",
      static_cast<double>(g_store->event_count()) / std::max(critical_s, 1e-9));
  std::printf("query.scan_events_per_s %.0f events/s\n",
              static_cast<double>(slices) / scan_s);
  std::printf("query.point_ms %.3f ms\n", podscope::base::Median(points) * 1e3);
  return 0;
}
