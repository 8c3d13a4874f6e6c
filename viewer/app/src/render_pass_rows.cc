// rows: header backgrounds and grid lines under the tracks, separators
// over them.
#include <cmath>

#include "render_passes.h"

namespace podscope::viewer::app::render {

void PaintRowBackgrounds(const Frame& f, Canvas* canvas) {
  const TimelineState& s = *f.s;
  const auto& rows = s.layout->rows();
  for (int r = f.first_row; r < f.last_row; ++r) {
    const LayoutRow& row = rows[r];
    const int y = row.y - s.scroll_y;
    if (row.kind == RowKind::kHost) {
      canvas->Fill(0, y, f.plot.width(), row.height, kHostRow.rgb());
    } else if (row.kind == RowKind::kProcess ||
               row.kind == RowKind::kCounters) {
      canvas->Fill(0, y, f.plot.width(), row.height, kProcessRow.rgb());
    }
  }
  for (const RulerTick& tick : f.ruler.ticks) {
    canvas->Fill(static_cast<int>(std::floor(tick.x)), 0, 1, f.plot.height(),
                 kGrid.rgb());
  }
}

void PaintRowSeparators(const Frame& f, Canvas* canvas) {
  const TimelineState& s = *f.s;
  const auto& rows = s.layout->rows();
  for (int r = f.first_row; r < f.last_row; ++r) {
    const int y = rows[r].y - s.scroll_y + rows[r].height - 1;
    canvas->Fill(0, y, f.plot.width(), 1, kSeparator.rgb());
  }
}

}  // namespace podscope::viewer::app::render
