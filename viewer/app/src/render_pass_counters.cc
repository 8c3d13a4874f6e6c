// counters: a counter track's band of values per pixel and its line.
#include <algorithm>
#include <cmath>

#include "render_passes.h"
#include "time_format.h"

namespace podscope::viewer::app::render {

void PaintCounter(const Frame& f, const LayoutRow& row, const TrackQuery& q,
                  StoreCache& cache, Canvas* canvas, TrackOut* out) {
  if (row.counter_top < 0) return;
  const TimelineState& s = *f.s;
  const int top = row.y - s.scroll_y + row.counter_top;
  const CounterView& view = q.counter;
  const auto [lo, hi] = cache.CounterScale(row.track);
  const int h = TrackLayout::kCounterHeight - 4;
  // Plot coordinates for the canvas; the line is moved to widget
  // coordinates at the end.
  auto y_of = [&, lo = lo, hi = hi](double v) {
    const double frac = (v - lo) / (hi - lo);
    return top + 2 + h - std::clamp(frac, 0.0, 1.0) * h;
  };
  QPolygonF line;
  bool have = view.has_before;
  double last = view.before;
  if (have) line << QPointF(0, y_of(last));
  for (const CounterPixel& px : view.pixels) {
    const double x = px.pixel;
    if (have) line << QPointF(x, y_of(last));
    const double ymin = y_of(px.max), ymax = y_of(px.min);
    canvas->Blend(static_cast<int>(x), static_cast<int>(ymin), 1,
                  std::max(1, static_cast<int>(std::ceil(ymax - ymin))),
                  kCounterFill.rgba());
    last = px.last;
    have = true;
    line << QPointF(x, y_of(last));
  }
  if (have) line << QPointF(f.plot.width(), y_of(last));
  line.translate(f.plot.x(), f.plot.y());
  out->boxes += view.pixels.size();
  const TrackInfo& info = s.store->tracks()[row.track];
  const QString scale = QStringLiteral("max ") +
                        QString::fromStdString(FormatValue(hi, info.unit));
  out->labels.push_back(
      {QPointF(f.plot.x() + 4, f.plot.y() + top + 11), scale, kDimText.rgb()});
  out->lines.push_back(std::move(line));
}

}  // namespace podscope::viewer::app::render
