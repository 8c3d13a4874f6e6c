// Paints the timeline (ruler, track tree, slices, instants, samples,
// counters, selection, range and flows) with QPainter onto any paint
// device: the widget and the frame benchmark share it. A paint is a
// sequence of render passes (render_passes.h) over one Frame; everything
// the passes draw comes from viewer/core's level-of-detail queries, so a
// frame costs O(pixels) whatever the window holds. The queries of the
// visible tracks are kept while the window stays the same.
#ifndef PODSCOPE_VIEWER_APP_TIMELINE_RENDERER_H_
#define PODSCOPE_VIEWER_APP_TIMELINE_RENDERER_H_

#include <QColor>
#include <QPainter>
#include <QRect>
#include <QString>
#include <cstdint>
#include <memory>
#include <vector>

#include "render_context.h"

namespace podscope::viewer::app {

class TimelineRenderer {
 public:
  static constexpr int kRulerHeight = render::kRulerHeight;
  static constexpr int kLabelWidth = render::kLabelWidth;
  static constexpr int kMinTextBoxWidth = render::kMinTextBoxWidth;

  TimelineRenderer() = default;

  // Forget per-store caches (colours, names, text widths, counter scales).
  void SetStore(const TraceStore* store);

  // The part of `area` where time runs left to right below the ruler.
  static QRect PlotRect(const QRect& area) { return render::PlotRect(area); }
  static QRect LabelRect(const QRect& area) { return render::LabelRect(area); }

  void Paint(QPainter& painter, const QRect& area, const TimelineState& s);

  // Does ahead of the frames what would otherwise land in the first one:
  // the canvas for an `area` this size is allocated and its pages touched,
  // the fonts' glyphs are rasterized, and the memory the level-of-detail
  // queries of a zoomed-out frame fill is allocated and touched (for the
  // store given to SetStore). The widget calls it when it is resized or a
  // trace opens; painting another size later costs that frame the
  // allocation.
  void Prepare(const QSize& area);

  QColor ColorOf(StringId name) { return QColor::fromRgb(RgbOf(name)); }
  QRgb RgbOf(StringId name) { return cache_.Rgb(name); }
  const QString& NameText(StringId name) { return cache_.Text(name); }

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
    size_t queried = 0;  // tracks queried (not served from the cache)
    // Where the paint's time went: the canvas reset and rows pass, the
    // queries and track passes (on several threads), the text pass, the
    // canvas drawn onto the device, the highlight, flows, track tree and
    // axis passes, and the whole paint.
    double canvas_ms = 0;
    double tracks_ms = 0;
    double text_ms = 0;
    double compose_ms = 0;
    double overlay_ms = 0;
    double total_ms = 0;
  };
  const FrameStats& last_frame() const { return frame_; }

 private:
  // The visible tracks queried (unless cached) and painted by the track
  // passes into the canvas; returns their outputs in row order.
  std::vector<render::TrackOut> PaintTracks(const render::Frame& f);
  // Makes ready the query results and scratch of a frame `pixels` wide
  // and `height` high (see Prepare).
  void PrepareQueries(uint32_t pixels, int height);

  render::Fonts fonts_;
  render::StoreCache cache_;
  render::Canvas canvas_;
  bool glyphs_ready_ = false;
  FrameStats frame_;
  // The query cache: valid for one window.
  bool cache_enabled_ = true;
  const TraceStore* cache_store_ = nullptr;
  int64_t cache_t0_ = 0;
  int64_t cache_t1_ = 0;
  uint32_t cache_pixels_ = 0;
  std::vector<std::unique_ptr<render::TrackQuery>> queries_;  // by track
  // Emptied query results whose room the next queries fill.
  std::vector<std::unique_ptr<render::TrackQuery>> spare_;
  // One per painting thread.
  std::vector<SliceQueryScratch> scratch_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TIMELINE_RENDERER_H_
