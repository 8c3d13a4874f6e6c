// The timeline: tracks of every host on one time axis, with zoom around
// the cursor, pan, range selection, click-to-select and collapsible
// host/process headers. View-model math lives in TimeAxis and TrackLayout,
// painting in TimelineRenderer; this class turns input into changes of
// them.
#ifndef PODSCOPE_VIEWER_APP_TIMELINE_WIDGET_H_
#define PODSCOPE_VIEWER_APP_TIMELINE_WIDGET_H_

#include <QPoint>
#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "podscope/viewer/trace_store.h"
#include "timeline_renderer.h"

class QScrollBar;

namespace podscope::viewer::app {

class TimelineWidget : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  void SetStore(std::shared_ptr<const TraceStore> store);
  // The overview rows of the store changed (exact ones replaced those
  // made from the files' indexes).
  void OverviewsChanged();
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
  // Called to load the events of overview processes before their header
  // is expanded (TraceStore::LoadDetail on the window's store).
  void SetDetailLoader(
      std::function<void(const std::vector<ProcessId>&)> load_detail) {
    load_detail_ = std::move(load_detail);
  }
  void SetAllCollapsed(bool collapsed);
  // Which rows are shown (TrackLayout): a track hidden, only one track,
  // every track again; only each rank's main thread and device streams;
  // compact rows. layoutModeChanged() follows each.
  void SetTrackHidden(TrackId track, bool hidden);
  void ShowOnlyTrack(TrackId track);
  void ShowAllTracks();
  void SetRanksSideBySide(bool on);
  void SetCompact(bool on);
  // Each rank's step windows, drawn as "step N" bands (any order).
  void SetSteps(std::vector<StepBand> steps);
  // Whether every row fitted the timeline when the store was set.
  bool first_screen_fits() const { return first_screen_fits_; }
  const std::vector<StepBand>& steps() const { return state_.steps; }
  // A job doctor's marks (doctor_dump.h); empty clears. The time axis
  // grows to hold them (they run to the dump, past the last event).
  void SetDoctorMarks(std::vector<DoctorMark> marks);
  const std::vector<DoctorMark>& doctor_marks() const {
    return state_.doctor_marks;
  }
  // What the zoom and pan keys do, for the window's shortcuts: zoom around
  // the mouse (or the selection) and pan by an eighth of the plot.
  void ZoomByKey(bool in);
  void PanByKey(bool towards_earlier);
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

  // Live traces (timeline_follow.cc). The store grew in place: rows, time
  // bounds and caches follow it, the selection is found again, and while
  // following, the window keeps its span with its right edge on the
  // newest time. A user who zooms or pans stops following; End (or
  // SetFollowing) resumes.
  void StoreGrew();
  // Selects an event and zooms the window to it (with a tenth of its
  // length around it).
  void ZoomToEvent(const EventRef& event);
  // Zooms the window to [t0, t1] with a tenth of its length around it.
  void ZoomToTimes(int64_t t0, int64_t t1);
  // Events outlined on top of the timeline (a selected collective's peers
  // on every rank); empty clears.
  void SetHighlighted(std::vector<EventRef> events);
  const std::vector<EventRef>& highlighted() const { return highlighted_; }
  // Where an event's box is drawn (widget coordinates), when its track is
  // shown and it overlaps the window.
  std::optional<QRect> BoxOf(const EventRef& event) const;
  bool following() const { return following_; }
  void SetFollowing(bool on);

 signals:
  void selectionChanged();
  void rangeChanged();
  void viewChanged();
  // The user asked to find text (the '/' or Ctrl+F key on the timeline).
  void findRequested();
  void followingChanged(bool following);
  // Ranks side by side, compact rows or hidden tracks changed.
  void layoutModeChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void focusInEvent(QFocusEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  enum class Drag { kNone, kPan, kRange, kLabels };
  QRect PaintArea() const;
  void UpdateScrollBar();
  void ViewChanged();
  double KeyAnchorX() const;

  std::shared_ptr<const TraceStore> store_;
  std::function<void(const std::vector<ProcessId>&)> load_detail_;
  TrackLayout layout_;
  TimelineRenderer renderer_;
  TimelineState state_;
  QScrollBar* vbar_ = nullptr;
  Drag drag_ = Drag::kNone;
  QPoint press_pos_;
  QPoint last_pos_;
  bool moved_ = false;
  // The press that gave the timeline focus: a click on nothing keeps the
  // selection.
  bool press_took_focus_ = false;
  bool focus_by_click_ = false;
  bool first_screen_fits_ = true;  // Qt gives focus before the press arrives
  void LayoutChanged();
  int64_t range_anchor_ = 0;
  std::optional<double> mouse_plot_x_;
  // Live: the window last set by following (a different window means the
  // user moved it), and the selected slice's identity to find it again
  // after its track was rebuilt.
  void FollowEnd();
  bool following_ = false;
  bool follow_fit_ = false;  // following shows the whole trace
  int64_t follow_t0_ = 0;
  int64_t follow_t1_ = 0;
  struct SelectedKey {
    int64_t start = 0;
    int64_t duration = 0;
    StringId name = 0;
  };
  std::optional<SelectedKey> selected_key_;
  std::vector<EventRef> highlighted_;
  void PaintHighlighted(QPainter& p);
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TIMELINE_WIDGET_H_
