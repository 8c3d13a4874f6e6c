// viewer/app benchmark: the worst offscreen paint of the whole timeline
// (ruler, labels, every visible track's slices) into a 1920x1080 image, at
// the zoomed-out, middle and zoomed-in views of viewer/core's benchmark
// capture (16 host files, 100 M events by default; `--viewer_events=N` for
// a quicker run). Each paint starts from fresh level-of-detail queries: the
// renderer keeps no per-window cache. Prints the headline
//   viewer.frame_ms_max
// after the Google Benchmark output.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/resource.h>

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "bench_capture.h"
#include "common/headline.h"
#include "podscope/viewer/trace_store.h"
#include "timeline_renderer.h"
#include "track_layout.h"

namespace {

using podscope::viewer::TraceStore;
namespace app = podscope::viewer::app;

TraceStore* g_store = nullptr;
double g_frame_ms_max = 0;

void BM_Frame(benchmark::State& state) {
  const QRect area(0, 0, 1920, 1080);
  app::TrackLayout layout;
  layout.Reset(g_store);
  app::TimelineRenderer renderer;
  renderer.SetStore(g_store);
  // What the widget does when it is shown at this size, before its first
  // paint: the canvas and the glyphs are made ready.
  renderer.Prepare(area.size());
  // Every frame queries afresh, as the first frame of a new window does.
  renderer.set_query_cache(false);
  app::TimelineState s;
  s.store = g_store;
  s.layout = &layout;
  s.axis.SetWidth(app::TimelineRenderer::PlotRect(area).width());
  const int64_t first = g_store->first_ns(), last = g_store->last_ns();
  s.axis.SetBounds(first, last);
  const int64_t zoom = state.range(0);
  if (zoom > 1) {
    const int64_t span = std::max<int64_t>((last - first) / zoom, 1);
    const int64_t mid = first + (last - first) / 2;
    s.axis.SetWindow(mid - span / 2, mid - span / 2 + span);
  } else {
    s.axis.SetWindow(first, last);
  }
  QImage image(area.size(), QImage::Format_ARGB32_Premultiplied);
  // The paint device exists before the frame, as a window's backing store
  // does: its pages are not the frame's cost.
  image.fill(Qt::white);
  double worst_ms = 0;
  double tracks_ms = 0;
  bool first_frame = true;
  for (auto _ : state) {
    rusage usage_before;
    getrusage(RUSAGE_SELF, &usage_before);
    const auto start = std::chrono::steady_clock::now();
    {
      QPainter painter(&image);
      renderer.Paint(painter, area, s);
    }
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    worst_ms = std::max(worst_ms, ms);
    const auto& f = renderer.last_frame();
    tracks_ms += f.tracks_ms;
    if (first_frame) {
      rusage usage_after;
      getrusage(RUSAGE_SELF, &usage_after);
      // Pages the frame touched for the first time.
      state.counters["first_page_faults"] =
          static_cast<double>(usage_after.ru_minflt - usage_before.ru_minflt);
      // The first frame of the view, where the breakdown says what a cold
      // frame costs.
      state.counters["first_ms"] = ms;
      state.counters["first_canvas_ms"] = f.canvas_ms;
      state.counters["first_tracks_ms"] = f.tracks_ms;
      state.counters["first_text_ms"] = f.text_ms;
      state.counters["first_compose_ms"] = f.compose_ms;
      state.counters["first_overlay_ms"] = f.overlay_ms;
      first_frame = false;
    }
  }
  const auto& frame = renderer.last_frame();
  state.counters["tracks"] = static_cast<double>(frame.tracks);
  state.counters["boxes"] = static_cast<double>(frame.boxes);
  state.counters["labels"] = static_cast<double>(frame.labels);
  state.counters["worst_ms"] = worst_ms;
  state.counters["tracks_ms_mean"] =
      tracks_ms / static_cast<double>(state.iterations());
  g_frame_ms_max = std::max(g_frame_ms_max, worst_ms);
  // The last run reports the worst of all of them.
  state.counters["viewer.frame_ms_max"] = g_frame_ms_max;
}
BENCHMARK(BM_Frame)
    ->Arg(1)
    ->Arg(100)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 100'000'000;
  // --viewer_fifo: once the capture is loaded, run the frames (and the
  // painting threads they start) at real-time priority, so that on a
  // machine shared with other work the frames measure the renderer rather
  // than other processes' time slices. Needs the privilege to do so.
  bool fifo = false;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--viewer_events=", 16) == 0) {
      events = std::strtoull(argv[i] + 16, nullptr, 10);
    } else if (std::strcmp(argv[i], "--viewer_fifo") == 0) {
      fifo = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  int qt_argc = 1;
  QGuiApplication application(qt_argc, argv);
  const std::string dir = podscope::viewer::testing::EnsureBenchCapture(events);
  auto store = TraceStore::Open(dir);
  if (!store.ok()) {
    std::fprintf(stderr, "open failed: %s\n",
                 std::string(store.status().message()).c_str());
    return 1;
  }
  g_store = store->get();
  {
    // The window's first paint, before any trace is open, loads the fonts
    // (Qt's font database, fontconfig): once per process, not a frame's
    // cost. No trace is involved, so no query result is kept.
    QImage blank(QSize(640, 480), QImage::Format_ARGB32_Premultiplied);
    QPainter painter(&blank);
    app::TimelineRenderer renderer;
    renderer.Paint(painter, blank.rect(), app::TimelineState{});
  }
  std::fprintf(stderr, "loaded %llu events, %zu tracks\n",
               static_cast<unsigned long long>(g_store->event_count()),
               g_store->tracks().size());
  if (fifo) {
    sched_param param{};
    param.sched_priority = 10;
    if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
      std::fprintf(stderr, "--viewer_fifo: %s\n", std::strerror(errno));
      return 1;
    }
  }
  podscope::bench::RegisterHeadline("viewer.frame_ms_max", "ms");
  int rest_argc = static_cast<int>(rest.size());
  return podscope::bench::RunBenchmarksWithHeadlines(rest_argc, rest.data());
}
