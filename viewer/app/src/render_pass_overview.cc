// overview: the host rows of a store opened as an overview, for hosts whose
// events are not loaded yet: each pixel shaded by how busy the host's
// busiest track was in it, and a tick where each step starts when the
// steps are far enough apart to tell.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "render_passes.h"

namespace podscope::viewer::app::render {

void PaintOverviewRows(const Frame& f, Canvas* canvas) {
  const TimelineState& s = *f.s;
  if (!s.store->is_overview()) return;
  const auto& rows = s.layout->rows();
  const int width = f.plot.width();
  for (int r = f.first_row; r < f.last_row; ++r) {
    const LayoutRow& row = rows[r];
    if (row.kind != RowKind::kHost) continue;
    std::vector<const ProcessOverview*> overviews;
    for (ProcessId p : s.store->hosts()[row.host].processes) {
      const ProcessInfo& info = s.store->processes()[p];
      if (!info.detail && info.overview != nullptr) {
        overviews.push_back(info.overview.get());
      }
    }
    if (overviews.empty()) continue;
    const int top = row.y - s.scroll_y + 3;
    const int height = row.height - 6;
    for (int x = 0; x < width; ++x) {
      const int64_t t0 = s.axis.XToTime(x);
      const int64_t t1 = std::max(s.axis.XToTime(x + 1), t0 + 1);
      float busy = 0;
      for (const ProcessOverview* o : overviews) {
        busy = std::max(busy, o->BusyIn(t0, t1));
      }
      if (busy > 0) {
        canvas->Fill(x, top, 1, height, BusyShade(kOverviewBusy.rgb(), busy));
      }
    }
    // Step starts, when no two share a few pixels.
    for (const ProcessOverview* o : overviews) {
      auto first = std::lower_bound(o->steps.begin(), o->steps.end(),
                                    std::make_pair(s.axis.t0(), int64_t{0}));
      auto last = std::upper_bound(
          first, o->steps.end(),
          std::make_pair(s.axis.t1(), std::numeric_limits<int64_t>::max()));
      if (last - first > width / 4) continue;
      for (auto it = first; it != last; ++it) {
        const int x = static_cast<int>(std::floor(s.axis.TimeToX(it->first)));
        if (x >= 0 && x < width)
          canvas->Fill(x, top, 1, height, kStepTick.rgb());
      }
    }
  }
}

}  // namespace podscope::viewer::app::render
