// highlight: hover and selection outlines, the cursor line, the range.
#include <cmath>

#include "render_passes.h"

namespace podscope::viewer::app::render {
namespace {

void Outline(QPainter& p, const Frame& f, const EventRef& e, bool strong) {
  auto rect = EventRect(f, e);
  if (!rect) return;
  // Keep the outline drawable when the event runs far past the window.
  QRectF r = rect->intersected(QRectF(f.plot).adjusted(-4, -4, 4, 4));
  if (r.isEmpty()) r = *rect;
  p.setClipRect(f.plot);
  p.setRenderHint(QPainter::Antialiasing, false);
  if (strong) {
    p.setPen(QPen(kSelection, 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
    p.setPen(QPen(Qt::white, 1));
    p.drawRect(r.adjusted(2, 2, -2, -2));
  } else {
    p.setPen(QPen(QColor(0, 0, 0, 140), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r.adjusted(0, 0, -1, -1));
  }
  p.setClipping(false);
}

}  // namespace

void PaintHover(QPainter& p, const Frame& f) {
  const TimelineState& s = *f.s;
  if (s.hovered && s.hovered != s.selected) Outline(p, f, *s.hovered, false);
}

void PaintSelection(QPainter& p, const Frame& f) {
  if (f.s->selected) Outline(p, f, *f.s->selected, true);
}

void PaintCursor(QPainter& p, const Frame& f) {
  const TimelineState& s = *f.s;
  if (!s.cursor_ns) return;
  const double x = s.axis.TimeToX(*s.cursor_ns);
  p.setClipRect(f.plot);
  p.fillRect(QRectF(f.plot.x() + std::floor(x), f.plot.y(), 1, f.plot.height()),
             QColor(0, 0, 0, 60));
  p.setClipping(false);
}

void PaintRange(QPainter& p, const Frame& f) {
  const TimelineState& s = *f.s;
  if (!s.range) return;
  const QRect& plot = f.plot;
  const QRect& area = f.area;
  const double x0 = plot.x() + s.axis.TimeToX(s.range->first);
  const double x1 = plot.x() + s.axis.TimeToX(s.range->second);
  const double l = std::max<double>(x0, plot.x());
  const double r = std::min<double>(x1, plot.right() + 1);
  if (r > l) {
    p.fillRect(QRectF(l, area.y(), r - l, area.height()), kRangeFill);
  }
  for (double x : {x0, x1}) {
    if (x >= plot.x() && x <= plot.right() + 1) {
      p.fillRect(QRectF(std::floor(x), area.y(), 1, area.height()), kRangeEdge);
    }
  }
}

}  // namespace podscope::viewer::app::render
