// axis: the ruler over the plot and the window's span over the track tree;
// also the placeholder frame when there is nothing to show.
#include <QFontMetricsF>
#include <algorithm>
#include <cmath>

#include "render_passes.h"
#include "time_format.h"

namespace podscope::viewer::app::render {

void PaintAxis(QPainter& p, const Frame& f, const Fonts& fonts) {
  const TimelineState& s = *f.s;
  const QRect& area = f.area;
  const QRect& plot = f.plot;
  const QRect bar(area.x(), area.y(), area.width(), kRulerHeight);
  p.fillRect(bar, kRulerBg);
  p.fillRect(bar.x(), bar.bottom(), bar.width(), 1, kSeparator);
  const QFontMetricsF metrics(fonts.small);
  p.setFont(fonts.small);
  p.setClipRect(QRect(plot.x(), bar.y(), plot.width(), bar.height()));
  for (const RulerTick& tick : f.ruler.ticks) {
    const int x = plot.x() + static_cast<int>(std::floor(tick.x));
    p.fillRect(x, bar.bottom() - 8, 1, 8, kDimText);
    p.setPen(kText);
    p.drawText(QPointF(x + 3, bar.bottom() - 10),
               QString::fromStdString(tick.label));
  }
  // The duration of the selected range, over it.
  if (s.range) {
    const double x0 = plot.x() + s.axis.TimeToX(s.range->first);
    const double x1 = plot.x() + s.axis.TimeToX(s.range->second);
    const QString text = QString::fromStdString(
        FormatDuration(s.range->second - s.range->first));
    const double w = metrics.horizontalAdvance(text) + 10;
    double cx = (x0 + x1) / 2;
    cx = std::clamp<double>(cx, plot.x() + w / 2, plot.right() - w / 2);
    const QRectF box(cx - w / 2, bar.y() + 2, w, metrics.height() + 2);
    p.fillRect(box, kRangeEdge);
    p.setPen(Qt::white);
    p.drawText(box, Qt::AlignCenter, text);
  }
  if (s.cursor_ns && !s.range) {
    const double x = plot.x() + s.axis.TimeToX(*s.cursor_ns);
    const QString text = QString::fromStdString(
        FormatRulerTime(f.ruler, *s.cursor_ns - s.store->first_ns()));
    const double w = metrics.horizontalAdvance(text) + 8;
    const QRectF box(std::min<double>(x, plot.right() - w), bar.y() + 2, w,
                     metrics.height() + 2);
    p.fillRect(box, QColor(0x40, 0x44, 0x4C));
    p.setPen(Qt::white);
    p.drawText(box, Qt::AlignCenter, text);
  }
  p.setClipping(false);
  // The window's span, over the labels.
  p.setPen(kDimText);
  p.drawText(QRect(area.x() + 6, bar.y(), kLabelWidth - 12, bar.height()),
             Qt::AlignVCenter | Qt::AlignLeft,
             QStringLiteral("window %1")
                 .arg(QString::fromStdString(FormatDuration(s.axis.span()))));
  p.setFont(fonts.normal);
}

void PaintEmpty(QPainter& p, const QRect& area, const TimelineState& s,
                const Fonts& fonts) {
  p.fillRect(area, kBackground);
  p.setFont(fonts.normal);
  p.fillRect(LabelRect(area), kGutter);
  p.fillRect(QRect(area.x(), area.y(), area.width(), kRulerHeight), kRulerBg);
  p.setPen(kDimText);
  p.drawText(PlotRect(area), Qt::AlignCenter,
             s.store == nullptr
                 ? QStringLiteral("Open a trace: File › Open, or drop a "
                                  ".podtrace file or a session folder here")
                 : QStringLiteral("This trace holds no events"));
}

}  // namespace podscope::viewer::app::render
