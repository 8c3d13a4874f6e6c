// What the timeline's render passes (render_passes.h) share: the palette,
// the frame being painted (geometry, state, visible rows, ruler), the
// pixel canvas the track passes write into, and the per-store caches of
// colours, names, text widths and counter scales. A Frame is built once per
// paint and only read by the passes; the caches hold values derived from
// the store alone, so no pass output depends on an earlier frame.
#ifndef PODSCOPE_VIEWER_APP_RENDER_CONTEXT_H_
#define PODSCOPE_VIEWER_APP_RENDER_CONTEXT_H_

#include <QColor>
#include <QFont>
#include <QImage>
#include <QPointF>
#include <QPolygonF>
#include <QRect>
#include <QRectF>
#include <QString>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "podscope/viewer/doctor_dump.h"
#include "podscope/viewer/lod.h"
#include "podscope/viewer/trace_store.h"
#include "time_axis.h"
#include "track_layout.h"

namespace podscope::viewer::app {

// A step's window on one rank, as `podscope analyze`'s step table has it
// (viewer/core AnalyzeSteps): the timeline draws it as a "step N" band.
struct StepBand {
  ProcessId process = 0;
  int64_t number = 0;  // the step's number, or its row when unnumbered
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

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
  // Each rank's steps, by process then start.
  std::vector<StepBand> steps;
  // A job doctor's dump: the stalled collective on each rank inside it,
  // the scope of the rank it names (doctor_dump.h).
  std::vector<DoctorMark> doctor_marks;
};

namespace render {

inline constexpr int kRulerHeight = 28;
inline constexpr int kLabelWidth = 240;
inline constexpr int kMinTextBoxWidth = 20;

inline constexpr QRgb kBackgroundRgb = qRgb(0xFF, 0xFF, 0xFF);
inline const QColor kBackground{kBackgroundRgb};
inline const QColor kGutter{0xF3, 0xF4, 0xF6};
inline const QColor kHostRow{0xE4, 0xE8, 0xEE};
inline const QColor kProcessRow{0xEE, 0xF0, 0xF4};
// A host row of an overview: how busy the host was, and its step starts.
inline const QColor kOverviewBusy{0x3A, 0x7C, 0xC8};
inline const QColor kStepTick{0x1F, 0x3A, 0x60};
inline const QColor kSeparator{0xD0, 0xD4, 0xDA};
inline const QColor kGrid{0xEC, 0xEE, 0xF1};
inline const QColor kRulerBg{0xF8, 0xF9, 0xFA};
inline const QColor kText{0x20, 0x24, 0x2A};
inline const QColor kDimText{0x66, 0x6E, 0x78};
inline const QColor kWarning{0xC0, 0x5A, 0x00};
inline const QColor kSample{0x6A, 0x84, 0xB0};
inline const QColor kCounterLine{0x2E, 0x6F, 0xBF};
inline const QColor kCounterFill{0x2E, 0x6F, 0xBF, 0x38};
inline const QColor kSelection{0x10, 0x10, 0x10};
inline const QColor kRangeFill{0x3A, 0x7B, 0xE0, 0x30};
inline const QColor kRangeEdge{0x2A, 0x5F, 0xB8};
inline const QColor kFlow{0x20, 0x20, 0x20};
// The job doctor's marks: a rank waiting in the stalled collective, and
// where the rank the verdict names was.
inline const QColor kDoctorWait{0xD0, 0x3A, 0x2A};
inline const QColor kDoctorWhere{0x7A, 0x2E, 0xC8};

struct Fonts {
  Fonts();
  QFont normal;
  QFont bold;
  QFont small;
};

// Rasterizes the printable ASCII glyphs of each font into Qt's glyph
// caches (process-wide), so the first frame's text does not.
void PrepareGlyphs(const Fonts& fonts);

// The part of `area` where time runs left to right below the ruler, and
// the track tree's column left of it.
QRect PlotRect(const QRect& area);
QRect LabelRect(const QRect& area);

// One paint's inputs. Rows [first_row, last_row) of the layout are at
// least partly visible.
struct Frame {
  // A frame of `s`, which must have a store and a non-empty layout.
  Frame(const QRect& area, const TimelineState& s);
  QRect area;
  QRect plot;
  const TimelineState* s;
  int first_row = 0;
  int last_row = 0;
  Ruler ruler;
  uint32_t pixels() const { return static_cast<uint32_t>(plot.width()); }
};

// t - t0 without overflow, as a double.
double Since(int64_t t, int64_t t0);

// The rectangle an event is drawn in (widget coordinates), if its track is
// shown.
std::optional<QRectF> EventRect(const Frame& f, const EventRef& e);

// The plot's pixels: slices, instants, samples and counter bands are
// written directly (a QPainter call per one-pixel box costs more than the
// query that found it), then drawn with one drawImage. Writers on several
// threads must keep to disjoint rows.
class Canvas {
 public:
  // Sized to `size` (the image is reused while the size stays) and filled.
  void Reset(const QSize& size, QRgb fill);
  void Fill(int x, int y, int w, int h, QRgb color);
  // Rows [y, y + h) of the columns from x on, column x + i in colors[i].
  void FillRow(int x, int y, int h, std::span<const QRgb> colors);
  // `color` with alpha, blended over what is there.
  void Blend(int x, int y, int w, int h, QRgb color);
  const QImage& image() const { return image_; }

 private:
  QImage image_;
  uchar* bits_ = nullptr;
  qsizetype stride_ = 0;
};

// Values derived from a store alone, computed on first use: the colour,
// text and text width of each name, each counter track's scale, which
// processes come from damaged files. Rgb() and CounterScale() may be called
// from several painting threads (CounterScale for different tracks);
// Text() and TextWidth() from the painting thread only.
class StoreCache {
 public:
  void Reset(const TraceStore* store, const QFont& font);
  const TraceStore* store() const { return store_; }
  QRgb Rgb(StringId name);
  const QString& Text(StringId name);
  float TextWidth(StringId name);
  // The value range a counter track is drawn over (all its values, with a
  // zero baseline when all are positive).
  std::pair<double, double> CounterScale(TrackId track);
  bool ProcessDamaged(ProcessId p) const {
    return p < process_damaged_.size() && process_damaged_[p] != 0;
  }

 private:
  const TraceStore* store_ = nullptr;
  QFont font_;
  // 0 until computed; filled from several painting threads.
  std::unique_ptr<std::atomic<QRgb>[]> colors_;
  size_t color_count_ = 0;
  std::vector<QString> names_;
  std::vector<uint8_t> has_name_;
  std::vector<float> text_widths_;  // < 0: not measured
  std::vector<std::pair<double, double>> counter_scales_;
  std::vector<uint8_t> has_counter_scale_;
  std::vector<uint8_t> process_damaged_;
};

// A text drawn over the plot (widget coordinates).
struct Label {
  QPointF at;
  QString text;
  QRgb color;
};

// A box wide enough for its name; the text is measured and elided by the
// text pass on the painting thread.
struct PendingLabel {
  StringId name;
  int x;  // plot coordinates of the visible part's left
  int lane_y;
  double room;
  QRgb color;
};

// What the level-of-detail queries returned for one track and window.
struct TrackQuery {
  std::vector<VisibleSlice> slices;
  std::vector<VisibleInstant> instants;
  CounterView counter;
  // Per slice depth, how busy each pixel is (see lod.h's QueryBusy).
  std::vector<std::vector<float>> busy;
};

// What the track passes produced for one track besides its pixels.
struct TrackOut {
  std::vector<PendingLabel> pending;
  std::vector<Label> labels;
  std::vector<QPolygonF> lines;  // widget coordinates
  size_t boxes = 0;
};

}  // namespace render
}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_RENDER_CONTEXT_H_
