// summary and steps: what a header row shows of the rows under it (how
// busy they were while collapsed) and each rank's step windows.
#include <QFontMetricsF>
#include <algorithm>
#include <cmath>

#include "podscope/viewer/lod.h"
#include "render_passes.h"

namespace podscope::viewer::app::render {
namespace {

namespace proto = trace_format::proto;

inline const QColor kStepBand{0x5B, 0x8D, 0xD6, 0x40};
inline const QColor kStepBandAlt{0x5B, 0x8D, 0xD6, 0x20};
inline const QColor kStepEdge{0x2A, 0x5F, 0xB8};

// The processes a header row stands for.
std::vector<ProcessId> ProcessesOf(const TraceStore& store,
                                   const LayoutRow& row) {
  if (row.kind == RowKind::kHost) return store.hosts()[row.host].processes;
  return {row.process};
}

}  // namespace

void PaintCollapsedRows(const Frame& f, Canvas* canvas) {
  const TimelineState& s = *f.s;
  const auto& rows = s.layout->rows();
  const uint32_t pixels = f.pixels();
  for (int r = f.first_row; r < f.last_row; ++r) {
    const LayoutRow& row = rows[r];
    if (!row.collapsed || row.kind == RowKind::kTrack ||
        row.kind == RowKind::kCounters) {
      continue;
    }
    std::vector<float> busy(pixels, 0.0f);
    bool any = false;
    for (ProcessId p : ProcessesOf(*s.store, row)) {
      if (!s.store->processes()[p].detail) continue;
      for (TrackId t : s.store->processes()[p].tracks) {
        const TrackInfo& info = s.store->tracks()[t];
        if (info.kind == proto::TRACK_KIND_COUNTER) continue;
        const SliceColumns& slices = s.store->data(t).slices;
        if (slices.empty()) continue;
        const std::vector<float> b =
            QueryBusy(slices, 0, s.axis.t0(), s.axis.t1(), pixels);
        for (size_t x = 0; x < b.size() && x < busy.size(); ++x) {
          busy[x] = std::max(busy[x], b[x]);
        }
        any = true;
      }
    }
    if (!any) continue;
    const int top = row.y - s.scroll_y + 3;
    const int height = std::max(1, row.height - 6);
    for (uint32_t x = 0; x < pixels; ++x) {
      if (busy[x] > 0) {
        canvas->Fill(static_cast<int>(x), top, 1, height,
                     BusyShade(kOverviewBusy.rgb(), busy[x]));
      }
    }
  }
}

void PaintStepBands(QPainter& p, const Frame& f, const Fonts& fonts) {
  const TimelineState& s = *f.s;
  if (s.steps.empty()) return;
  const auto& rows = s.layout->rows();
  p.save();
  p.setClipRect(f.plot);
  p.setFont(fonts.small);
  const QFontMetricsF metrics(fonts.small);
  for (int r = f.first_row; r < f.last_row; ++r) {
    const LayoutRow& row = rows[r];
    ProcessId process = row.process;
    if (row.kind == RowKind::kHost) {
      if (!row.collapsed) continue;
      const auto& of = s.store->hosts()[row.host].processes;
      if (of.empty()) continue;
      process = of.front();
    } else if (row.kind != RowKind::kProcess) {
      continue;
    }
    auto first = std::lower_bound(
        s.steps.begin(), s.steps.end(), process,
        [](const StepBand& b, ProcessId v) { return b.process < v; });
    const int y = f.plot.y() + row.y - s.scroll_y;
    for (auto it = first; it != s.steps.end() && it->process == process; ++it) {
      if (it->end_ns < s.axis.t0() || it->start_ns > s.axis.t1()) continue;
      const double x0 = f.plot.x() + s.axis.TimeToX(it->start_ns);
      const double x1 = f.plot.x() + s.axis.TimeToX(it->end_ns);
      const QRectF band(x0, y + 1, std::max(1.0, x1 - x0), row.height - 2);
      p.fillRect(band, (it->number % 2 == 0) ? kStepBand : kStepBandAlt);
      p.fillRect(QRectF(x0, y + 1, 1, row.height - 2), kStepEdge);
      const QString text = QStringLiteral("step %1").arg(it->number);
      if (metrics.horizontalAdvance(text) + 6 <= x1 - x0) {
        p.setPen(kText);
        p.drawText(QPointF(std::max(x0, static_cast<double>(f.plot.x())) + 3,
                           y + (row.height + metrics.ascent()) / 2 - 1),
                   text);
      }
    }
  }
  p.restore();
}

}  // namespace podscope::viewer::app::render
