// Paints the timeline (ruler, track labels, slices, instants, samples,
// counters, selection, range and flows) with QPainter onto any paint
// device: the widget and the frame benchmark share it. Everything it draws
// comes from viewer/core's level-of-detail queries, so a frame costs
// O(pixels) whatever the window holds.
#ifndef PODSCOPE_VIEWER_APP_TIMELINE_RENDERER_H_
#define PODSCOPE_VIEWER_APP_TIMELINE_RENDERER_H_

#include <QColor>
#include <QFont>
#include <QImage>
#include <QPainter>
#include <QPolygonF>
#include <QRect>
#include <QString>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "podscope/viewer/lod.h"
#include "podscope/viewer/trace_store.h"
#include "time_axis.h"
#include "track_layout.h"

namespace podscope::viewer::app {

struct TimelineState {
  const TraceStore* store = nullptr;
  const TrackLayout* layout = nullptr;
  TimeAxis axis;  // its width is the plot's
  int scroll_y = 0;
  std::optional<EventRef> selected;
  std::optional<EventRef> hovered;
  std::optional<std::pair<int64_t, int64_t>> range;
  // Where the mouse is over the plot (time), drawn as a cursor line.
  std::optional<int64_t> cursor_ns;
};

class TimelineRenderer {
 public:
  static constexpr int kRulerHeight = 28;
  static constexpr int kLabelWidth = 240;
  static constexpr int kMinTextBoxWidth = 20;

  TimelineRenderer();

  // Forget per-store caches (colours, names, text widths, counter scales).
  void SetStore(const TraceStore* store);

  // The part of `area` where time runs left to right below the ruler.
  static QRect PlotRect(const QRect& area);
  static QRect LabelRect(const QRect& area);

  void Paint(QPainter& painter, const QRect& area, const TimelineState& s);

  QColor ColorOf(StringId name) { return QColor::fromRgb(RgbOf(name)); }
  QRgb RgbOf(StringId name);
  const QString& NameText(StringId name);

  // Query results are kept while the window (t0, t1, width) stays the same,
  // so a repaint for the cursor, hover or selection does not query again.
  // Off: every paint queries (the benchmark measures that).
  void set_query_cache(bool on) {
    cache_enabled_ = on;
    InvalidateCache();
  }
  void InvalidateCache();

  // Counts of the last paint, for tests and the benchmark.
  struct FrameStats {
    size_t tracks = 0;
    size_t boxes = 0;
    size_t labels = 0;
    size_t queried = 0;    // tracks queried (not served from the cache)
    double tracks_ms = 0;  // queries and boxes of the tracks, on two threads
    double total_ms = 0;   // the whole paint
  };
  const FrameStats& last_frame() const { return frame_; }

  // The slice, instant, sample and counter pixels of the plot, written
  // directly (a QPainter call per one-pixel box costs more than the query
  // that found it), then drawn with one drawImage.
  class Canvas {
   public:
    void Reset(const QSize& size, QRgb fill);
    void Fill(int x, int y, int w, int h, QRgb color);
    // `color` with alpha, blended over what is there.
    void Blend(int x, int y, int w, int h, QRgb color);
    const QImage& image() const { return image_; }

   private:
    QImage image_;
    uchar* bits_ = nullptr;
    qsizetype stride_ = 0;
  };

 private:
  struct TrackDraw {
    std::vector<VisibleSlice> slices;
    std::vector<VisibleInstant> instants;
    CounterView counter;
  };
  struct Label {
    QPointF at;
    QString text;
    QRgb color;
  };
  // A box wide enough for its name; the text is measured and elided on the
  // painting thread.
  struct PendingLabel {
    StringId name;
    int x;  // plot coordinates of the visible part's left
    int lane_y;
    double room;
    QRgb color;
  };
  // What painting one track produced besides its pixels (tracks are
  // painted on two threads, each into its own rows of the canvas).
  struct TrackOut {
    std::vector<PendingLabel> pending;
    std::vector<Label> labels;
    std::vector<QPolygonF> lines;
    size_t boxes = 0;
  };
  void PaintLabels(QPainter& p, const QRect& area, const TimelineState& s,
                   int first_row, int last_row);
  void PaintRuler(QPainter& p, const QRect& area, const TimelineState& s);
  void PaintTrack(const QRect& plot, const TimelineState& s,
                  const LayoutRow& row, const TrackDraw& draw, TrackOut* out);
  void PaintCounter(const QRect& plot, const TimelineState& s,
                    const LayoutRow& row, const TrackDraw& draw, int top,
                    TrackOut* out);
  void PaintSamples(const QRect& plot, const TimelineState& s,
                    const LayoutRow& row, int top, TrackOut* out);
  void PaintSelection(QPainter& p, const QRect& plot, const TimelineState& s,
                      const EventRef& e, bool strong);
  void PaintFlows(QPainter& p, const QRect& plot, const TimelineState& s);
  void PaintRange(QPainter& p, const QRect& area, const TimelineState& s);
  // The rectangle an event is drawn in (widget coordinates), if its track
  // is shown.
  std::optional<QRectF> EventRect(const QRect& plot, const TimelineState& s,
                                  const EventRef& e) const;
  float TextWidth(StringId name);
  std::pair<double, double> CounterScale(TrackId track);

  const TraceStore* store_ = nullptr;
  // 0 until computed; filled from both painting threads.
  std::unique_ptr<std::atomic<QRgb>[]> colors_;
  size_t color_count_ = 0;
  std::vector<QString> names_;
  std::vector<uint8_t> has_name_;
  std::vector<float> text_widths_;  // < 0: not measured
  std::vector<std::pair<double, double>> counter_scales_;
  std::vector<uint8_t> has_counter_scale_;
  QFont font_;
  QFont bold_font_;
  QFont small_font_;
  std::vector<uint8_t> process_damaged_;
  FrameStats frame_;
  Canvas canvas_;
  std::vector<Label> labels_;
  std::vector<QPolygonF> counter_lines_;
  // The query cache: valid for one window.
  bool cache_enabled_ = true;
  const TraceStore* cache_store_ = nullptr;
  int64_t cache_t0_ = 0;
  int64_t cache_t1_ = 0;
  uint32_t cache_pixels_ = 0;
  std::vector<std::unique_ptr<TrackDraw>> cache_;  // by track
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TIMELINE_RENDERER_H_
