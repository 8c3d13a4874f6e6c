#include "timeline_widget.h"

#include <QContextMenuEvent>
#include <QFocusEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "hit_test.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace {

constexpr double kKeyZoom = 1.3;
constexpr int kClickSlop = 4;

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setObjectName("timeline");
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setMinimumSize(400, 200);
  setAttribute(Qt::WA_OpaquePaintEvent);
  vbar_ = new QScrollBar(Qt::Vertical, this);
  vbar_->setObjectName("timelineScrollBar");
  connect(vbar_, &QScrollBar::valueChanged, this, [this](int v) {
    if (v != state_.scroll_y) {
      state_.scroll_y = v;
      update();
    }
  });
  state_.layout = &layout_;
}

void TimelineWidget::SetStore(std::shared_ptr<const TraceStore> store) {
  store_ = std::move(store);
  state_.store = store_.get();
  state_.selected.reset();
  state_.hovered.reset();
  state_.range.reset();
  highlighted_.clear();
  state_.steps.clear();
  state_.doctor_marks.clear();
  state_.scroll_y = 0;
  selected_key_.reset();
  if (following_) {
    following_ = false;
    emit followingChanged(false);
  }
  renderer_.SetStore(store_.get());
  renderer_.Prepare(PaintArea().size());
  layout_.Reset(store_.get());
  state_.axis.SetWidth(PlotRect().width());
  if (store_) {
    state_.axis.SetBounds(store_->first_ns(), store_->last_ns());
  } else {
    state_.axis.SetBounds(0, 1);
  }
  UpdateScrollBar();
  // Several ranks: every rank's rows on the first screen.
  first_screen_fits_ = layout_.FitFirstScreen(
      TimelineRenderer::PlotRect(QRect(0, 0, width(), height())).height());
  UpdateScrollBar();
  update();
  emit selectionChanged();
  emit rangeChanged();
  emit viewChanged();
  emit layoutModeChanged();
}

void TimelineWidget::OverviewsChanged() {
  renderer_.SetStore(store_.get());
  update();
}

void TimelineWidget::LayoutChanged() {
  UpdateScrollBar();
  update();
  emit layoutModeChanged();
}

void TimelineWidget::SetTrackHidden(TrackId track, bool hidden) {
  layout_.SetTrackHidden(track, hidden);
  LayoutChanged();
}

void TimelineWidget::ShowOnlyTrack(TrackId track) {
  layout_.ShowOnly(track);
  LayoutChanged();
}

void TimelineWidget::ShowAllTracks() {
  layout_.ShowAllTracks();
  LayoutChanged();
}

void TimelineWidget::SetRanksSideBySide(bool on) {
  layout_.SetRanksSideBySide(on);
  SetScrollY(0);
  LayoutChanged();
}

void TimelineWidget::SetCompact(bool on) {
  layout_.SetCompact(on);
  LayoutChanged();
}

void TimelineWidget::SetDoctorMarks(std::vector<DoctorMark> marks) {
  state_.doctor_marks = std::move(marks);
  // A stalled collective and the scope a rank was stuck in had not ended
  // when the ranks dumped, so they have no slice: the marks run past the
  // last recorded event, and the time axis must reach them.
  if (store_ && !state_.doctor_marks.empty()) {
    int64_t first = store_->first_ns(), last = store_->last_ns();
    for (const DoctorMark& m : state_.doctor_marks) {
      first = std::min(first, m.start_ns);
      last = std::max(last, m.end_ns);
    }
    state_.axis.SetBounds(first, last);
    ViewChanged();
  }
  update();
}

void TimelineWidget::SetSteps(std::vector<StepBand> steps) {
  std::sort(steps.begin(), steps.end(),
            [](const StepBand& a, const StepBand& b) {
              return a.process != b.process ? a.process < b.process
                                            : a.start_ns < b.start_ns;
            });
  state_.steps = std::move(steps);
  update();
}

void TimelineWidget::ZoomByKey(bool in) {
  if (!store_) return;
  ZoomAt(KeyAnchorX(), in ? kKeyZoom : 1 / kKeyZoom);
}

void TimelineWidget::PanByKey(bool towards_earlier) {
  if (!store_) return;
  const int page = PlotRect().width() / 8;
  PanBy(towards_earlier ? page : -page);
}

void TimelineWidget::contextMenuEvent(QContextMenuEvent* event) {
  if (!store_) return;
  const int y = event->pos().y() - PlotRect().y() + state_.scroll_y;
  const int r = event->pos().y() >= PlotRect().y() ? layout_.RowAt(y) : -1;
  QMenu menu(this);
  menu.setObjectName("timeline.contextMenu");
  if (r >= 0 && layout_.rows()[r].kind == RowKind::kTrack) {
    const TrackId track = layout_.rows()[r].track;
    QAction* hide = menu.addAction(tr("Hide Track"));
    hide->setObjectName("track.hide");
    connect(hide, &QAction::triggered, this,
            [this, track] { SetTrackHidden(track, true); });
    QAction* only = menu.addAction(tr("Show Only This Track"));
    only->setObjectName("track.only");
    connect(only, &QAction::triggered, this,
            [this, track] { ShowOnlyTrack(track); });
  }
  QAction* all = menu.addAction(tr("Show All Tracks"));
  all->setObjectName("track.all");
  all->setEnabled(layout_.any_hidden());
  connect(all, &QAction::triggered, this, &TimelineWidget::ShowAllTracks);
  menu.exec(event->globalPos());
}

QRect TimelineWidget::PaintArea() const {
  const int bar = vbar_->isHidden() ? 0 : vbar_->sizeHint().width();
  return QRect(0, 0, std::max(1, width() - bar), height());
}

QRect TimelineWidget::PlotRect() const {
  return TimelineRenderer::PlotRect(PaintArea());
}

void TimelineWidget::UpdateScrollBar() {
  const int visible =
      TimelineRenderer::PlotRect(QRect(0, 0, width(), height())).height();
  const int max = std::max(0, layout_.total_height() - visible);
  vbar_->setRange(0, max);
  vbar_->setPageStep(std::max(1, visible));
  vbar_->setSingleStep(TrackLayout::kLaneHeight * 2);
  vbar_->setVisible(max > 0);
  const int w = vbar_->sizeHint().width();
  vbar_->setGeometry(width() - w, TimelineRenderer::kRulerHeight, w,
                     std::max(1, height() - TimelineRenderer::kRulerHeight));
  state_.scroll_y = std::clamp(state_.scroll_y, 0, max);
  vbar_->setValue(state_.scroll_y);
  state_.axis.SetWidth(PlotRect().width());
}

void TimelineWidget::SetScrollY(int y) {
  state_.scroll_y = std::clamp(y, 0, vbar_->maximum());
  vbar_->setValue(state_.scroll_y);
  update();
}

void TimelineWidget::ViewChanged() {
  update();
  emit viewChanged();
}

void TimelineWidget::SetWindow(int64_t t0, int64_t t1) {
  state_.axis.SetWindow(t0, t1);
  ViewChanged();
}

void TimelineWidget::FitAll() {
  state_.axis.Fit();
  ViewChanged();
}

void TimelineWidget::ZoomAt(double plot_x, double factor) {
  state_.axis.ZoomAround(plot_x, factor);
  ViewChanged();
}

void TimelineWidget::PanBy(double dx_pixels) {
  state_.axis.PanPixels(dx_pixels);
  ViewChanged();
}

void TimelineWidget::ZoomToTimes(int64_t t0, int64_t t1) {
  const int64_t pad = std::max<int64_t>((t1 - t0) / 10, 10);
  state_.axis.SetWindow(t0 - pad, t1 + pad);
  ViewChanged();
}

void TimelineWidget::Select(std::optional<EventRef> event, bool reveal) {
  if (event && (!store_ || event->track >= store_->tracks().size())) {
    event.reset();
  }
  state_.selected = event;
  selected_key_.reset();
  if (event && event->kind == trace_format::EventKind::kSlice) {
    selected_key_ =
        SelectedKey{store_->StartOf(*event), store_->DurationOf(*event),
                    store_->NameOf(*event)};
  }
  if (event && reveal) {
    layout_.Reveal(event->track);
    UpdateScrollBar();
    emit layoutModeChanged();
    const int r = layout_.RowOfTrack(event->track);
    if (r >= 0) {
      const int y = layout_.LaneCenter(event->track, DepthOf(*store_, *event));
      const int visible = PlotRect().height();
      if (y < state_.scroll_y + 10 || y > state_.scroll_y + visible - 10) {
        SetScrollY(y - visible / 3);
      }
    }
    const int64_t start = store_->StartOf(*event);
    const int64_t duration = store_->DurationOf(*event);
    const TimeAxis& a = state_.axis;
    if (duration > a.span()) {
      ZoomToTimes(start, start + duration);
    } else if (start < a.t0() || start + duration > a.t1()) {
      state_.axis.CenterOn(start + duration / 2);
      ViewChanged();
    }
  }
  update();
  emit selectionChanged();
}

void TimelineWidget::SetRange(
    std::optional<std::pair<int64_t, int64_t>> range) {
  if (range && range->second < range->first) {
    std::swap(range->first, range->second);
  }
  state_.range = range;
  update();
  emit rangeChanged();
}

void TimelineWidget::ToggleRow(int row) {
  const auto& rows = layout_.rows();
  if (store_ && load_detail_ && row >= 0 &&
      row < static_cast<int>(rows.size()) && rows[row].collapsed) {
    // Expanding a host (or process) of an overview loads its events first.
    std::vector<ProcessId> missing;
    const LayoutRow& r = rows[row];
    const std::vector<ProcessId> one = {r.process};
    const auto& of =
        r.kind == RowKind::kHost ? store_->hosts()[r.host].processes : one;
    for (ProcessId p : of) {
      if (!store_->processes()[p].detail) missing.push_back(p);
    }
    if (!missing.empty()) {
      load_detail_(missing);
      renderer_.SetStore(store_.get());
      layout_.Reset(store_.get());
    }
  }
  if (layout_.ToggleRow(row)) LayoutChanged();
}

void TimelineWidget::SetAllCollapsed(bool collapsed) {
  layout_.SetAllCollapsed(collapsed);
  LayoutChanged();
}

std::optional<QPoint> TimelineWidget::PointOf(const EventRef& event) const {
  if (!store_) return std::nullopt;
  const int r = layout_.RowOfTrack(event.track);
  if (r < 0) return std::nullopt;
  const QRect plot = PlotRect();
  const int64_t start = store_->StartOf(event);
  const int64_t end = start + store_->DurationOf(event);
  const int64_t a = std::max(start, state_.axis.t0());
  const int64_t b = std::min(end, state_.axis.t1());
  if (b < a) return std::nullopt;
  const double x = plot.x() + state_.axis.TimeToX(a + (b - a) / 2);
  const int y = plot.y() - state_.scroll_y +
                layout_.LaneCenter(event.track, DepthOf(*store_, event));
  if (!plot.contains(static_cast<int>(x), y)) return std::nullopt;
  return QPoint(static_cast<int>(x), y);
}

std::optional<EventRef> TimelineWidget::EventAt(const QPoint& pos) const {
  if (!store_) return std::nullopt;
  const QRect plot = PlotRect();
  if (!plot.contains(pos)) return std::nullopt;
  const int y = pos.y() - plot.y() + state_.scroll_y;
  const int r = layout_.RowAt(y);
  if (r < 0) return std::nullopt;
  const LayoutRow& row = layout_.rows()[r];
  const LaneHit lane = layout_.LaneAt(row, y);
  const double x = pos.x() - plot.x() + 0.5;
  const uint32_t pixels = static_cast<uint32_t>(plot.width());
  if (lane.kind == LaneHit::kSlice) {
    return HitSlice(*store_, row.track, lane.depth, state_.axis.t0(),
                    state_.axis.t1(), pixels, x);
  }
  if (lane.kind == LaneHit::kInstant) {
    return HitInstant(*store_, row.track, state_.axis.t0(), state_.axis.t1(),
                      pixels, x);
  }
  return std::nullopt;
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QRect area = PaintArea();
  renderer_.Paint(p, area, state_);
  PaintHighlighted(p);
  if (area.width() < width()) {
    // The corner above the scroll bar, beside the ruler.
    p.fillRect(QRect(area.right() + 1, 0, width() - area.width(),
                     TimelineRenderer::kRulerHeight),
               palette().window());
  }
}

void TimelineWidget::resizeEvent(QResizeEvent*) {
  // Keep the window; the same time span spreads over the new width.
  UpdateScrollBar();
  UpdateScrollBar();  // the bar's visibility may have changed the width
  // The canvas for the new size and the glyphs, before the next frame.
  renderer_.Prepare(PaintArea().size());
  emit viewChanged();
}

void TimelineWidget::wheelEvent(QWheelEvent* event) {
  const QRect plot = PlotRect();
  const QPoint pos = event->position().toPoint();
  const QPoint delta = event->angleDelta();
  const bool over_plot = pos.x() >= plot.x();
  if (!over_plot || (event->modifiers() & Qt::AltModifier)) {
    const int dy = delta.y() != 0 ? delta.y() : delta.x();
    SetScrollY(state_.scroll_y - dy);
  } else if ((event->modifiers() & Qt::ShiftModifier) || delta.x() != 0) {
    const int d = delta.x() != 0 ? delta.x() : delta.y();
    PanBy(d / 120.0 * plot.width() / 10.0);
  } else if (delta.y() != 0) {
    ZoomAt(pos.x() - plot.x(), std::pow(1.2, delta.y() / 120.0));
  }
  event->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* event) {
  press_took_focus_ = focus_by_click_ || !hasFocus();
  focus_by_click_ = false;
  setFocus(Qt::MouseFocusReason);
  if (event->button() != Qt::LeftButton || !store_) return;
  press_pos_ = last_pos_ = event->pos();
  moved_ = false;
  const QRect plot = PlotRect();
  if (event->pos().x() < plot.x()) {
    drag_ = Drag::kLabels;
  } else if (event->modifiers() & Qt::ShiftModifier) {
    drag_ = Drag::kRange;
    range_anchor_ = state_.axis.XToTime(event->pos().x() - plot.x());
  } else {
    drag_ = Drag::kPan;
  }
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* event) {
  const QRect plot = PlotRect();
  const QPoint pos = event->pos();
  if ((pos - press_pos_).manhattanLength() > kClickSlop) moved_ = true;
  if (store_ && pos.x() >= plot.x()) {
    mouse_plot_x_ = pos.x() - plot.x();
    state_.cursor_ns = state_.axis.XToTime(*mouse_plot_x_);
  } else {
    mouse_plot_x_.reset();
    state_.cursor_ns.reset();
  }
  if (drag_ == Drag::kPan && moved_) {
    const QPoint d = pos - last_pos_;
    state_.axis.PanPixels(d.x());
    SetScrollY(state_.scroll_y - d.y());
    ViewChanged();
  } else if (drag_ == Drag::kRange && moved_) {
    const int64_t t =
        state_.axis.XToTime(std::clamp(pos.x() - plot.x(), 0, plot.width()));
    state_.range =
        std::make_pair(std::min(t, range_anchor_), std::max(t, range_anchor_));
  } else if (drag_ == Drag::kNone) {
    state_.hovered = EventAt(pos);
  }
  last_pos_ = pos;
  update();
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const Drag drag = drag_;
  drag_ = Drag::kNone;
  if (drag == Drag::kRange) {
    if (moved_) {
      emit rangeChanged();
    }
    return;
  }
  if (moved_) return;
  if (drag == Drag::kLabels) {
    const int y = event->pos().y() - PlotRect().y() + state_.scroll_y;
    const int r = layout_.RowAt(y);
    if (r >= 0 && event->pos().y() >= PlotRect().y()) ToggleRow(r);
    return;
  }
  if (drag == Drag::kPan) {
    const std::optional<EventRef> hit = EventAt(event->pos());
    // A click that only brings focus back keeps what was selected.
    if (hit || !press_took_focus_) Select(hit);
  }
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !store_) return;
  if (auto e = EventAt(event->pos())) {
    state_.selected = e;
    const int64_t start = store_->StartOf(*e);
    ZoomToTimes(start, start + std::max<int64_t>(store_->DurationOf(*e), 1));
    emit selectionChanged();
  }
}

double TimelineWidget::KeyAnchorX() const {
  if (mouse_plot_x_ && underMouse()) return *mouse_plot_x_;
  if (state_.selected && store_) {
    const int64_t start = store_->StartOf(*state_.selected);
    const int64_t mid = start + store_->DurationOf(*state_.selected) / 2;
    const double x = state_.axis.TimeToX(mid);
    if (x >= 0 && x <= state_.axis.width()) return x;
  }
  return state_.axis.width() / 2.0;
}

void TimelineWidget::keyPressEvent(QKeyEvent* event) {
  if (!store_) {
    QWidget::keyPressEvent(event);
    return;
  }
  const int page = PlotRect().width() / 8;
  switch (event->key()) {
    case Qt::Key_W:
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      ZoomAt(KeyAnchorX(), kKeyZoom);
      break;
    case Qt::Key_S:
    case Qt::Key_Minus:
    case Qt::Key_Underscore:
      ZoomAt(KeyAnchorX(), 1 / kKeyZoom);
      break;
    case Qt::Key_A:
    case Qt::Key_Left:
      PanBy(page);
      break;
    case Qt::Key_D:
    case Qt::Key_Right:
      PanBy(-page);
      break;
    case Qt::Key_Up:
      SetScrollY(state_.scroll_y - TrackLayout::kLaneHeight * 2);
      break;
    case Qt::Key_Down:
      SetScrollY(state_.scroll_y + TrackLayout::kLaneHeight * 2);
      break;
    case Qt::Key_PageUp:
      SetScrollY(state_.scroll_y - PlotRect().height() * 9 / 10);
      break;
    case Qt::Key_PageDown:
      SetScrollY(state_.scroll_y + PlotRect().height() * 9 / 10);
      break;
    case Qt::Key_F:
      if (state_.range) {
        ZoomToTimes(state_.range->first, state_.range->second);
      } else if (state_.selected) {
        const int64_t start = store_->StartOf(*state_.selected);
        ZoomToTimes(
            start,
            start + std::max<int64_t>(store_->DurationOf(*state_.selected), 1));
      } else {
        FitAll();
      }
      break;
    case Qt::Key_0:
    case Qt::Key_Home:
      FitAll();
      break;
    case Qt::Key_End:
      SetFollowing(true);
      break;
    case Qt::Key_Escape:
      if (state_.range) {
        SetRange(std::nullopt);
      } else {
        Select(std::nullopt);
      }
      break;
    case Qt::Key_Slash:
      emit findRequested();
      break;
    default:
      QWidget::keyPressEvent(event);
      return;
  }
  event->accept();
}

void TimelineWidget::focusInEvent(QFocusEvent* event) {
  focus_by_click_ = event->reason() == Qt::MouseFocusReason;
  QWidget::focusInEvent(event);
}

void TimelineWidget::leaveEvent(QEvent*) {
  mouse_plot_x_.reset();
  state_.cursor_ns.reset();
  state_.hovered.reset();
  update();
}

bool TimelineWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip && store_) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (auto e = EventAt(help->pos())) {
      const std::string_view name = store_->str(store_->NameOf(*e));
      QString text =
          QStringLiteral("<b>%1</b><br>")
              .arg(QString::fromUtf8(name.data(), static_cast<int>(name.size()))
                       .toHtmlEscaped());
      if (e->kind == trace_format::EventKind::kSlice) {
        text += QStringLiteral("duration %1<br>")
                    .arg(QString::fromStdString(
                        FormatDuration(store_->DurationOf(*e))));
      }
      text += QStringLiteral("at %1 from the start")
                  .arg(QString::fromStdString(FormatDuration(
                      store_->StartOf(*e) - store_->first_ns())));
      QToolTip::showText(help->globalPos(), text, this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(event);
}

}  // namespace podscope::viewer::app
