// The timeline: tracks of every host on one time axis, with zoom around
// the cursor, pan, range selection, click-to-select and collapsible
// host/process headers. View-model math lives in TimeAxis and TrackLayout,
// painting in TimelineRenderer; this class turns input into changes of
// them.
#ifndef PODSCOPE_VIEWER_APP_TIMELINE_WIDGET_H_
#define PODSCOPE_VIEWER_APP_TIMELINE_WIDGET_H_

#include <QPoint>
#include <QWidget>
#include <memory>
#include <optional>
#include <utility>

#include "podscope/viewer/trace_store.h"
#include "timeline_renderer.h"

class QScrollBar;

namespace podscope::viewer::app {

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  void SetStore(std::shared_ptr<const TraceStore> store);
  const TraceStore* store() const { return store_.get(); }

  const TimeAxis& axis() const { return state_.axis; }
  void SetWindow(int64_t t0, int64_t t1);
  void FitAll();
  // factor > 1 zooms in around plot x (pixels from the plot's left).
  void ZoomAt(double plot_x, double factor);
  void PanBy(double dx_pixels);

  std::optional<EventRef> selected() const { return state_.selected; }
  // Selects an event (nullopt clears). With `reveal`, expands its headers
  // and scrolls it into view, zooming out if it is wider than the window.
  void Select(std::optional<EventRef> event, bool reveal = false);
  std::optional<std::pair<int64_t, int64_t>> range() const {
    return state_.range;
  }
  void SetRange(std::optional<std::pair<int64_t, int64_t>> range);

  TrackLayout& layout() { return layout_; }
  const TrackLayout& layout() const { return layout_; }
  void ToggleRow(int row);
  void SetAllCollapsed(bool collapsed);
  int scroll_y() const { return state_.scroll_y; }
  void SetScrollY(int y);

  // Where time runs, in widget coordinates.
  QRect PlotRect() const;
  // The centre of an event as drawn (widget coordinates), when its track
  // is shown and it is in the window.
  std::optional<QPoint> PointOf(const EventRef& event) const;
  // The event at a widget point, as a click would select it.
  std::optional<EventRef> EventAt(const QPoint& pos) const;

  TimelineRenderer& renderer() { return renderer_; }

 signals:
  void selectionChanged();
  void rangeChanged();
  void viewChanged();
  // The user asked to find text (the '/' or Ctrl+F key on the timeline).
  void findRequested();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  enum class Drag { kNone, kPan, kRange, kLabels };
  QRect PaintArea() const;
  void UpdateScrollBar();
  void ViewChanged();
  void ZoomToTimes(int64_t t0, int64_t t1);
  double KeyAnchorX() const;

  std::shared_ptr<const TraceStore> store_;
  TrackLayout layout_;
  TimelineRenderer renderer_;
  TimelineState state_;
  QScrollBar* vbar_ = nullptr;
  Drag drag_ = Drag::kNone;
  QPoint press_pos_;
  QPoint last_pos_;
  bool moved_ = false;
  int64_t range_anchor_ = 0;
  std::optional<double> mouse_plot_x_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TIMELINE_WIDGET_H_
