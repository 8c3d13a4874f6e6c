// peers: a selected collective's peers outlined and joined (peer_links.h).
#include <QPen>
#include <algorithm>

#include "peer_links.h"

namespace podscope::viewer::app {

void PaintPeerLinks(QPainter& p, const QRect& clip, std::vector<QRect> boxes) {
  if (boxes.empty()) return;
  p.save();
  p.setClipRect(clip);
  // Crisp lines: the colour says "peer", not a blend with what is under it.
  p.setRenderHint(QPainter::Antialiasing, false);
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(kPeerLinkColor, 2));
  for (const QRect& box : boxes) p.drawRect(box.adjusted(-1, -1, 1, 1));
  std::sort(boxes.begin(), boxes.end(), [](const QRect& a, const QRect& b) {
    return a.center().y() < b.center().y();
  });
  for (size_t i = 0; i + 1 < boxes.size(); ++i) {
    p.drawLine(QPoint(boxes[i].left(), boxes[i].center().y()),
               QPoint(boxes[i + 1].left(), boxes[i + 1].center().y()));
  }
  p.restore();
}

}  // namespace podscope::viewer::app
