// doctor: a job doctor's dump on the ranks' rows (doctor_dump.h). The
// process row carries the mark whatever is expanded, so a stall reads on
// the first screen; the thread's own row gets an outline when it is shown.
#include <QFontMetricsF>
#include <algorithm>

#include "render_passes.h"

namespace podscope::viewer::app::render {
namespace {

QColor MarkColor(const DoctorMark& m, int alpha) {
  QColor c = m.kind == DoctorMarkKind::kCollective ? kDoctorWait : kDoctorWhere;
  c.setAlpha(alpha);
  return c;
}

// Whether `row` stands for the mark's process: its process row, or its
// host's row when that is collapsed.
bool RowHolds(const TraceStore& store, const LayoutRow& row,
              const DoctorMark& m) {
  if (row.kind == RowKind::kProcess) return row.process == m.process;
  if (row.kind != RowKind::kHost || !row.collapsed) return false;
  return m.process < store.processes().size() &&
         store.processes()[m.process].host == row.host;
}

}  // namespace

void PaintDoctorMarks(QPainter& p, const Frame& f, const Fonts& fonts) {
  const TimelineState& s = *f.s;
  if (s.doctor_marks.empty()) return;
  const auto& rows = s.layout->rows();
  p.save();
  p.setClipRect(f.plot);
  p.setFont(fonts.small);
  const QFontMetricsF metrics(fonts.small);
  for (int r = f.first_row; r < f.last_row; ++r) {
    const LayoutRow& row = rows[r];
    const int y = f.plot.y() + row.y - s.scroll_y;
    for (const DoctorMark& m : s.doctor_marks) {
      if (m.end_ns < s.axis.t0() || m.start_ns > s.axis.t1()) continue;
      const double x0 = f.plot.x() + s.axis.TimeToX(m.start_ns);
      const double x1 = std::max(x0 + 2, f.plot.x() + s.axis.TimeToX(m.end_ns));
      if (row.kind == RowKind::kTrack && m.track && row.track == *m.track) {
        const QRectF box(x0, y + 1, x1 - x0, row.height - 2);
        p.fillRect(box, MarkColor(m, 0x28));
        p.setPen(QPen(MarkColor(m, 0xFF), 2));
        p.drawRect(box);
        continue;
      }
      if (!RowHolds(*s.store, row, m)) continue;
      const QRectF band(x0, y + 1, x1 - x0, row.height - 2);
      p.fillRect(band, MarkColor(m, 0xD0));
      const QString text = QString::fromStdString(m.label);
      const double left = std::max(x0, static_cast<double>(f.plot.x())) + 3;
      const double room = x1 - left - 3;
      if (room > 20) {
        p.setPen(Qt::white);
        p.drawText(QPointF(left, y + (row.height + metrics.ascent()) / 2 - 1),
                   metrics.elidedText(text, Qt::ElideRight, room));
      }
    }
  }
  p.restore();
}

}  // namespace podscope::viewer::app::render
