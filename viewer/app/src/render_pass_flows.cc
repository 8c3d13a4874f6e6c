// flows: the selected event's flows as arrows from cause to effect.
#include <QPainterPath>
#include <cmath>

#include "render_passes.h"

namespace podscope::viewer::app::render {

void PaintFlows(QPainter& p, const Frame& f) {
  const TimelineState& s = *f.s;
  if (!s.selected) return;
  const EventRef selected = *s.selected;
  const auto ends = s.store->Flows(selected);
  if (ends.empty()) return;
  const QRect& plot = f.plot;
  const double scale = plot.width() / static_cast<double>(s.axis.span());
  auto point_of = [&](const EventRef& e) -> std::optional<QPointF> {
    const double x = plot.x() + Since(s.store->StartOf(e), s.axis.t0()) * scale;
    if (auto r = EventRect(f, e)) return QPointF(x, r->center().y());
    // Hidden under a collapsed header: point at the header.
    const TrackInfo& t = s.store->tracks()[e.track];
    const ProcessInfo& proc = s.store->processes()[t.process];
    for (const LayoutRow& row : s.layout->rows()) {
      if ((row.kind == RowKind::kProcess && row.process == t.process) ||
          (row.kind == RowKind::kHost && row.host == proc.host &&
           row.collapsed)) {
        return QPointF(x, plot.y() + row.y - s.scroll_y + row.height / 2.0);
      }
    }
    return std::nullopt;
  };
  p.setClipRect(plot);
  p.setRenderHint(QPainter::Antialiasing, true);
  for (const TraceStore::FlowEnd& end : ends) {
    // The flow runs from its begin towards its end: an end whose phase is
    // kBegin is upstream of the selected event.
    const bool incoming = end.phase == trace_format::FlowPhase::kBegin;
    const EventRef from_e = incoming ? end.event : selected;
    const EventRef to_e = incoming ? selected : end.event;
    const auto from = point_of(from_e);
    const auto to = point_of(to_e);
    if (!from || !to) continue;
    QPainterPath path(*from);
    const double dx = std::max(30.0, std::fabs(to->x() - from->x()) / 2);
    path.cubicTo(from->x() + dx, from->y(), to->x() - dx, to->y(), to->x(),
                 to->y());
    p.setPen(QPen(kFlow, 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    // The arrow head along the curve's last direction (horizontal).
    QPolygonF head;
    head << *to << QPointF(to->x() - 8, to->y() - 4)
         << QPointF(to->x() - 8, to->y() + 4);
    p.setBrush(kFlow);
    p.drawPolygon(head);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(kFlow, 1));
    p.drawEllipse(*from, 3, 3);
  }
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setClipping(false);
}

}  // namespace podscope::viewer::app::render
