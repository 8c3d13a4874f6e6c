// The lines that join a selected collective's peers on the timeline: the
// same collective on every rank, outlined, and a line from each rank's
// arrival (the box's left edge) to the next rank's, top to bottom, so that
// who came late reads as a slant.
#ifndef PODSCOPE_VIEWER_APP_PEER_LINKS_H_
#define PODSCOPE_VIEWER_APP_PEER_LINKS_H_

#include <QColor>
#include <QPainter>
#include <QRect>
#include <vector>

namespace podscope::viewer::app {

// The outline and line colour of a collective's peers.
inline const QColor kPeerLinkColor{255, 140, 0};

// Outlines `boxes` (widget coordinates, within `clip`) and joins their left
// edges' middles in order of height.
void PaintPeerLinks(QPainter& p, const QRect& clip, std::vector<QRect> boxes);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_PEER_LINKS_H_
