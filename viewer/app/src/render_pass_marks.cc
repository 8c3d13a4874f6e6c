// marks: instants and CPU samples, a tick per occupied pixel.
#include <algorithm>

#include "render_passes.h"

namespace podscope::viewer::app::render {

void PaintInstants(const Frame& f, const LayoutRow& row, const TrackQuery& q,
                   StoreCache& cache, Canvas* canvas, TrackOut* out) {
  if (row.instant_lane < 0) return;
  const int y = row.y - f.s->scroll_y + row.instant_lane;
  for (const VisibleInstant& v : q.instants) {
    canvas->Fill(static_cast<int>(v.pixel) - 1, y + 1, 3,
                 TrackLayout::kInstantLaneHeight - 2,
                 QColor::fromRgb(cache.Rgb(v.name)).darker(130).rgb());
    ++out->boxes;
  }
}

void PaintSamples(const Frame& f, const LayoutRow& row, Canvas* canvas,
                  TrackOut* out) {
  if (row.sample_lane < 0) return;
  const TimelineState& s = *f.s;
  const int top = row.y - s.scroll_y + row.sample_lane;
  const auto& ts = s.store->data(row.track).samples.ts;
  const uint32_t pixels = f.pixels();
  const PixelGrid grid(s.axis.t0(), s.axis.t1(), pixels);
  auto it = std::lower_bound(ts.begin(), ts.end(), s.axis.t0());
  while (it != ts.end() && *it < s.axis.t1()) {
    const uint32_t px = grid.PixelOf(*it);
    canvas->Fill(static_cast<int>(px), top + 1, 1,
                 TrackLayout::kSampleLaneHeight - 2, kSample.rgb());
    ++out->boxes;
    if (px + 1 >= pixels) break;
    it = std::lower_bound(it, ts.end(), grid.Bound(px + 1));
  }
}

}  // namespace podscope::viewer::app::render
