// text: slice names and counter scales over the plot, and counter lines.
#include <QFontMetricsF>

#include "render_passes.h"

namespace podscope::viewer::app::render {

std::vector<Label> ResolveLabels(const Frame& f,
                                 const std::vector<TrackOut>& outs,
                                 const Fonts& fonts, StoreCache& cache,
                                 size_t* slice_labels) {
  std::vector<Label> labels;
  size_t names = 0;
  const QFontMetricsF metrics(fonts.normal);
  const double ascent = metrics.ascent();
  const double text_height = metrics.height();
  for (const TrackOut& out : outs) {
    for (const PendingLabel& pl : out.pending) {
      Label label;
      label.color = pl.color;
      label.at = QPointF(f.plot.x() + pl.x + 3,
                         f.plot.y() + pl.lane_y +
                             (TrackLayout::kLaneHeight - 1 - text_height) / 2 +
                             ascent);
      if (cache.TextWidth(pl.name) <= pl.room) {
        label.text = cache.Text(pl.name);
      } else {
        label.text =
            metrics.elidedText(cache.Text(pl.name), Qt::ElideRight, pl.room);
        if (label.text.size() <= 1) continue;
      }
      labels.push_back(std::move(label));
      ++names;
    }
    for (const Label& l : out.labels) labels.push_back(l);
  }
  if (slice_labels != nullptr) *slice_labels = names;
  return labels;
}

void DrawTexts(QPainter& p, const Frame& f, const std::vector<Label>& labels,
               const std::vector<TrackOut>& outs) {
  p.setClipRect(f.plot);
  for (const Label& label : labels) {
    p.setPen(QColor::fromRgb(label.color));
    p.drawText(label.at, label.text);
  }
  p.setPen(QPen(kCounterLine, 1));
  for (const TrackOut& out : outs) {
    for (const QPolygonF& line : out.lines) p.drawPolyline(line);
  }
  p.setClipping(false);
}

}  // namespace podscope::viewer::app::render
