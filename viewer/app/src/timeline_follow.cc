// TimelineWidget's live part (following a store that grows in place) and
// the outlines of highlighted events and the lines between them.
#include <QPainter>
#include <QPen>

#include "hit_test.h"
#include "peer_links.h"
#include "timeline_widget.h"

namespace podscope::viewer::app {

void TimelineWidget::SetFollowing(bool on) {
  const bool changed = on != following_;
  following_ = on;
  if (on && store_) {
    follow_fit_ = false;  // FollowEnd fits when the span covers the trace
    FollowEnd();
    ViewChanged();
  }
  if (changed) emit followingChanged(on);
}

void TimelineWidget::FollowEnd() {
  TimeAxis& a = state_.axis;
  const int64_t span = a.span();
  if (follow_fit_ || span >= a.last_ns() - a.first_ns()) {
    // The whole trace was shown: it stays shown as it grows.
    a.Fit();
    follow_fit_ = true;
  } else {
    // The newest time a fiftieth of the window from the right edge.
    const int64_t margin = span / 50;
    a.SetWindow(a.last_ns() + margin - span, a.last_ns() + margin);
  }
  follow_t0_ = a.t0();
  follow_t1_ = a.t1();
}

void TimelineWidget::StoreGrew() {
  if (!store_) return;
  TimeAxis& a = state_.axis;
  const int64_t t0 = a.t0(), t1 = a.t1();
  const bool was_empty = a.last_ns() - a.first_ns() <= 1;
  if (following_ && !was_empty && (t0 != follow_t0_ || t1 != follow_t1_)) {
    following_ = false;  // the user moved the window since
    follow_fit_ = false;
    emit followingChanged(false);
  }
  renderer_.SetStore(store_.get());
  layout_.Reset(store_.get());
  state_.hovered.reset();
  highlighted_.clear();
  a.SetBounds(store_->first_ns(), store_->last_ns());  // fits
  if (was_empty) follow_fit_ = true;
  if (following_ || was_empty) {
    if (!follow_fit_) a.SetWindow(t0, t1);  // keep the span
    FollowEnd();
  } else {
    a.SetWindow(t0, t1);
  }
  // Slice indices move when a track is rebuilt: find the selection again.
  if (state_.selected && selected_key_ &&
      state_.selected->track < store_->tracks().size()) {
    const SliceColumns& c = store_->data(state_.selected->track).slices;
    std::optional<EventRef> found;
    for (uint32_t d = 0; d < c.depth_count() && !found; ++d) {
      uint32_t i = c.FirstStartingAtOrAfter(c.depth_begin(d), c.depth_end(d),
                                            selected_key_->start);
      for (; i < c.depth_end(d) && c.start(i) == selected_key_->start; ++i) {
        if (c.duration(i) == selected_key_->duration &&
            c.name(i) == selected_key_->name) {
          found = EventRef{state_.selected->track,
                           trace_format::EventKind::kSlice, i};
          break;
        }
      }
    }
    if (found != state_.selected) {
      state_.selected = found;
      if (!found) selected_key_.reset();
      emit selectionChanged();
    }
  }
  UpdateScrollBar();
  update();
  emit viewChanged();
}

void TimelineWidget::ZoomToEvent(const EventRef& event) {
  Select(event, /*reveal=*/true);
  if (!state_.selected) return;
  const int64_t start = store_->StartOf(event);
  ZoomToTimes(start, start + std::max<int64_t>(store_->DurationOf(event), 1));
}

void TimelineWidget::SetHighlighted(std::vector<EventRef> events) {
  highlighted_ = std::move(events);
  update();
}

std::optional<QRect> TimelineWidget::BoxOf(const EventRef& event) const {
  if (!store_ || event.track >= store_->tracks().size()) return std::nullopt;
  if (layout_.RowOfTrack(event.track) < 0) return std::nullopt;
  const QRect plot = PlotRect();
  const int64_t start = store_->StartOf(event);
  const int64_t end = start + std::max<int64_t>(store_->DurationOf(event), 1);
  if (end < state_.axis.t0() || start > state_.axis.t1()) return std::nullopt;
  const double x0 = std::max(0.0, state_.axis.TimeToX(start));
  const double x1 =
      std::min(static_cast<double>(plot.width()), state_.axis.TimeToX(end));
  const int y = plot.y() - state_.scroll_y +
                layout_.LaneCenter(event.track, DepthOf(*store_, event));
  const int h = layout_.rows()[layout_.RowOfTrack(event.track)].lane_height;
  const QRect box(plot.x() + static_cast<int>(x0), y - h / 2,
                  std::max(2, static_cast<int>(x1 - x0)), h);
  if (!box.intersects(plot)) return std::nullopt;
  return box;
}

void TimelineWidget::PaintHighlighted(QPainter& p) {
  std::vector<QRect> boxes;
  for (const EventRef& e : highlighted_) {
    if (auto box = BoxOf(e)) boxes.push_back(*box);
  }
  PaintPeerLinks(p, PlotRect(), std::move(boxes));
}

}  // namespace podscope::viewer::app
