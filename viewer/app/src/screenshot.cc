#include "screenshot.h"

#include <QApplication>
#include <QImage>
#include <QPixmap>
#include <cstdio>

#include "hit_test.h"
#include "main_window.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {

void ApplyRange(MainWindow& window, const TimeRangeSpec& range) {
  const auto store = window.store();
  if (!store) return;
  const int64_t origin = store->first_ns();
  const int64_t t0 = range.t0 ? origin + *range.t0 : origin;
  const int64_t t1 = range.t1 ? origin + *range.t1 : store->last_ns() + 1;
  window.timeline()->SetWindow(t0, std::max(t1, t0 + 1));
}

int RunScreenshot(const CliOptions& options) {
  MainWindow window;
  window.resize(options.width, options.height);
  window.show();
  window.OpenPath(QString::fromStdString(options.path),
                  QString::fromStdString(options.session));
  // A generous bound: a large capture takes a while to load on a small
  // machine, but a stuck load must not hang a script forever.
  if (!window.WaitUntilIdle(30 * 60 * 1000)) {
    std::fprintf(stderr, "podscope-viewer: timed out loading %s\n",
                 options.path.c_str());
    return 1;
  }
  if (!window.store()) {
    std::fprintf(stderr, "podscope-viewer: %s\n",
                 window.load_error().toStdString().c_str());
    return 1;
  }
  if (options.range) ApplyRange(window, *options.range);
  window.WaitUntilIdle(10 * 60 * 1000);
  QApplication::processEvents();
  const QImage image = window.grab().toImage();
  if (!image.save(QString::fromStdString(options.screenshot))) {
    std::fprintf(stderr, "podscope-viewer: could not write %s\n",
                 options.screenshot.c_str());
    return 1;
  }
  if (options.verbose) {
    TimelineWidget* t = window.timeline();
    const QRect plot = t->PlotRect();
    const QPoint origin = t->mapTo(&window, plot.topLeft());
    std::printf("image %d %d\n", image.width(), image.height());
    std::printf("timeline.plot %d %d %d %d\n", origin.x(), origin.y(),
                plot.width(), plot.height());
    std::printf("timeline.window %lld %lld\n",
                static_cast<long long>(t->axis().t0()),
                static_cast<long long>(t->axis().t1()));
    std::printf("timeline.origin %lld\n",
                static_cast<long long>(window.store()->first_ns()));
    const TrackLayout& layout = t->layout();
    for (const LayoutRow& row : layout.rows()) {
      if (row.kind != RowKind::kTrack || row.slice_top < 0) continue;
      const int top = origin.y() + row.y - t->scroll_y() + row.slice_top;
      if (top >= origin.y() + plot.height()) break;
      std::printf("track %u %d %d %u %s\n", row.track, top, row.lane_height,
                  row.depths, TrackPath(*window.store(), row.track).c_str());
    }
    if (!window.banner_text().isEmpty()) {
      std::printf("banner %s\n", window.banner_text().toStdString().c_str());
    }
  }
  return 0;
}

}  // namespace podscope::viewer::app
