#include "timeline_renderer.h"

#include <QFontMetricsF>
#include <QPainterPath>
#include <QPolygonF>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "hit_test.h"
#include "name_colors.h"
#include "podscope/viewer/lod.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace {

using trace_format::EventKind;
namespace proto = trace_format::proto;

const QColor kBackground(0xFF, 0xFF, 0xFF);
const QColor kGutter(0xF3, 0xF4, 0xF6);
const QColor kHostRow(0xE4, 0xE8, 0xEE);
const QColor kProcessRow(0xEE, 0xF0, 0xF4);
const QColor kSeparator(0xD0, 0xD4, 0xDA);
const QColor kGrid(0xEC, 0xEE, 0xF1);
const QColor kRulerBg(0xF8, 0xF9, 0xFA);
const QColor kText(0x20, 0x24, 0x2A);
const QColor kDimText(0x66, 0x6E, 0x78);
const QColor kWarning(0xC0, 0x5A, 0x00);
const QColor kSample(0x6A, 0x84, 0xB0);
const QColor kCounterLine(0x2E, 0x6F, 0xBF);
const QColor kCounterFill(0x2E, 0x6F, 0xBF, 0x38);
const QColor kSelection(0x10, 0x10, 0x10);
const QColor kRangeFill(0x3A, 0x7B, 0xE0, 0x30);
const QColor kRangeEdge(0x2A, 0x5F, 0xB8);
const QColor kFlow(0x20, 0x20, 0x20);

// t - t0 without overflow, as a double.
double Since(int64_t t, int64_t t0) {
  int64_t d;
  if (__builtin_sub_overflow(t, t0, &d)) return t > t0 ? 9.2e18 : -9.2e18;
  return static_cast<double>(d);
}

}  // namespace

void TimelineRenderer::Canvas::Reset(const QSize& size, QRgb fill) {
  if (image_.size() != size) image_ = QImage(size, QImage::Format_RGB32);
  image_.fill(fill);
  bits_ = image_.bits();
  stride_ = image_.bytesPerLine();
}

void TimelineRenderer::Canvas::Fill(int x, int y, int w, int h, QRgb color) {
  const int x0 = std::max(x, 0), x1 = std::min(x + w, image_.width());
  const int y0 = std::max(y, 0), y1 = std::min(y + h, image_.height());
  if (x0 >= x1 || y0 >= y1) return;
  uchar* row = bits_ + y0 * stride_;
  const uchar* end = bits_ + y1 * stride_;
  const int width = x1 - x0;
  if (width <= 4) {
    // Most boxes of a zoomed-out view are a pixel or two wide: plain
    // stores down the column cost less than a fill call per row.
    for (; row < end; row += stride_) {
      QRgb* p = reinterpret_cast<QRgb*>(row) + x0;
      for (int i = 0; i < width; ++i) p[i] = color;
    }
    return;
  }
  for (; row < end; row += stride_) {
    QRgb* line = reinterpret_cast<QRgb*>(row);
    std::fill(line + x0, line + x1, color);
  }
}

void TimelineRenderer::Canvas::Blend(int x, int y, int w, int h, QRgb color) {
  const int x0 = std::max(x, 0), x1 = std::min(x + w, image_.width());
  const int y0 = std::max(y, 0), y1 = std::min(y + h, image_.height());
  const uint32_t a = qAlpha(color);
  for (int row = y0; row < y1; ++row) {
    QRgb* line = reinterpret_cast<QRgb*>(bits_ + row * stride_);
    for (int i = x0; i < x1; ++i) {
      const QRgb d = line[i];
      auto mix = [a](uint32_t src, uint32_t dst) {
        return (src * a + dst * (255 - a) + 127) / 255;
      };
      line[i] = qRgb(static_cast<int>(mix(qRed(color), qRed(d))),
                     static_cast<int>(mix(qGreen(color), qGreen(d))),
                     static_cast<int>(mix(qBlue(color), qBlue(d))));
    }
  }
}

void TimelineRenderer::InvalidateCache() {
  cache_.clear();
  cache_store_ = nullptr;
}

TimelineRenderer::TimelineRenderer() {
  font_.setPointSizeF(8.5);
  bold_font_ = font_;
  bold_font_.setBold(true);
  small_font_ = font_;
  small_font_.setPointSizeF(7.5);
}

void TimelineRenderer::SetStore(const TraceStore* store) {
  store_ = store;
  colors_.reset();
  color_count_ = 0;
  names_.clear();
  has_name_.clear();
  text_widths_.clear();
  counter_scales_.clear();
  has_counter_scale_.clear();
  process_damaged_.clear();
  if (store == nullptr) return;
  const size_t n = store->string_count();
  colors_ = std::make_unique<std::atomic<QRgb>[]>(n);
  color_count_ = n;
  for (size_t i = 0; i < n; ++i) colors_[i].store(0, std::memory_order_relaxed);
  names_.resize(n);
  has_name_.assign(n, 0);
  text_widths_.assign(n, -1.0f);
  counter_scales_.resize(store->tracks().size());
  has_counter_scale_.assign(store->tracks().size(), 0);
  process_damaged_.assign(store->processes().size(), 0);
  for (const LoadProblem& problem : store->problems()) {
    for (const ProcessInfo& p : store->processes()) {
      if (p.path == problem.path) process_damaged_[p.id] = 1;
    }
  }
}

QRect TimelineRenderer::PlotRect(const QRect& area) {
  return QRect(area.x() + kLabelWidth, area.y() + kRulerHeight,
               std::max(1, area.width() - kLabelWidth),
               std::max(1, area.height() - kRulerHeight));
}

QRect TimelineRenderer::LabelRect(const QRect& area) {
  return QRect(area.x(), area.y() + kRulerHeight, kLabelWidth,
               std::max(1, area.height() - kRulerHeight));
}

QRgb TimelineRenderer::RgbOf(StringId name) {
  if (name >= color_count_) {
    return 0xFF000000u | NameColorRgb(store_ ? store_->str(name) : "");
  }
  QRgb c = colors_[name].load(std::memory_order_relaxed);
  if (c == 0) {
    // Both threads may compute it; they get the same value.
    c = 0xFF000000u | NameColorRgb(store_->str(name));
    colors_[name].store(c, std::memory_order_relaxed);
  }
  return c;
}

const QString& TimelineRenderer::NameText(StringId name) {
  static const QString kEmpty;
  if (name >= names_.size()) return kEmpty;
  if (!has_name_[name]) {
    const std::string_view s = store_->str(name);
    names_[name] = QString::fromUtf8(s.data(), static_cast<int>(s.size()));
    has_name_[name] = 1;
  }
  return names_[name];
}

float TimelineRenderer::TextWidth(StringId name) {
  if (name >= text_widths_.size()) return 0;
  if (text_widths_[name] < 0) {
    text_widths_[name] = static_cast<float>(
        QFontMetricsF(font_).horizontalAdvance(NameText(name)));
  }
  return text_widths_[name];
}

std::pair<double, double> TimelineRenderer::CounterScale(TrackId track) {
  if (track >= has_counter_scale_.size()) return {0, 1};
  if (!has_counter_scale_[track]) {
    const CounterColumns& c = store_->data(track).counters;
    const std::span<const double> v(c.values);
    double lo = 0, hi = 1;
    if (!v.empty()) {
      lo = v[c.min_index.Best(v, 0, v.size())];
      hi = v[c.max_index.Best(v, 0, v.size())];
      if (lo > 0 && lo <= hi) lo = 0;  // a zero baseline reads best
      if (hi <= lo) hi = lo + 1;
    }
    counter_scales_[track] = {lo, hi};
    has_counter_scale_[track] = 1;
  }
  return counter_scales_[track];
}

void TimelineRenderer::Paint(QPainter& p, const QRect& area,
                             const TimelineState& s) {
  const auto paint_start = std::chrono::steady_clock::now();
  frame_ = {};
  p.save();
  p.fillRect(area, kBackground);
  p.setFont(font_);
  const QRect plot = PlotRect(area);
  const bool empty =
      s.store == nullptr || s.layout == nullptr || s.layout->rows().empty();
  if (empty) {
    p.fillRect(LabelRect(area), kGutter);
    p.fillRect(QRect(area.x(), area.y(), area.width(), kRulerHeight), kRulerBg);
    p.setPen(kDimText);
    p.drawText(plot, Qt::AlignCenter,
               s.store == nullptr
                   ? QStringLiteral("Open a trace: File › Open, or drop a "
                                    ".podtrace file or a session folder here")
                   : QStringLiteral("This trace holds no events"));
    p.restore();
    return;
  }

  const TrackLayout& layout = *s.layout;
  const auto& rows = layout.rows();
  const int top = std::max(0, s.scroll_y);
  const int bottom = s.scroll_y + plot.height();
  int first_row = layout.RowAt(top);
  if (first_row < 0) first_row = static_cast<int>(rows.size());
  int last_row = first_row;
  while (last_row < static_cast<int>(rows.size()) &&
         rows[last_row].y < bottom) {
    ++last_row;
  }

  const Ruler ruler = ChooseRuler(s.axis, s.store->first_ns(), 110);
  canvas_.Reset(plot.size(), kBackground.rgb());
  labels_.clear();
  counter_lines_.clear();
  // Row backgrounds, then the time grid, in plot coordinates.
  for (int r = first_row; r < last_row; ++r) {
    const LayoutRow& row = rows[r];
    const int y = row.y - s.scroll_y;
    if (row.kind == RowKind::kHost) {
      canvas_.Fill(0, y, plot.width(), row.height, kHostRow.rgb());
    } else if (row.kind == RowKind::kProcess) {
      canvas_.Fill(0, y, plot.width(), row.height, kProcessRow.rgb());
    }
  }
  for (const RulerTick& tick : ruler.ticks) {
    canvas_.Fill(static_cast<int>(std::floor(tick.x)), 0, 1, plot.height(),
                 kGrid.rgb());
  }

  // The queries of the visible tracks not in the cache, on two threads
  // when there are several, then the drawing on this one.
  const uint32_t pixels = static_cast<uint32_t>(plot.width());
  const int64_t t0 = s.axis.t0(), t1 = s.axis.t1();
  if (!cache_enabled_ || cache_store_ != s.store || cache_t0_ != t0 ||
      cache_t1_ != t1 || cache_pixels_ != pixels) {
    cache_.clear();
    cache_store_ = s.store;
    cache_t0_ = t0;
    cache_t1_ = t1;
    cache_pixels_ = pixels;
  }
  cache_.resize(s.store->tracks().size());
  std::vector<const LayoutRow*> shown;
  std::vector<TrackId> missing;
  for (int r = first_row; r < last_row; ++r) {
    if (rows[r].kind != RowKind::kTrack) continue;
    shown.push_back(&rows[r]);
    if (!cache_[rows[r].track]) {
      cache_[rows[r].track] = std::make_unique<TrackDraw>();
      missing.push_back(rows[r].track);
    }
  }
  // Each track is queried (unless cached) and drawn into its own rows of
  // the canvas by whichever of the two threads takes it.
  std::vector<TrackOut> outs(shown.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < shown.size();) {
      const TrackId track = shown[i]->track;
      TrackDraw& d = *cache_[track];
      if (std::find(missing.begin(), missing.end(), track) != missing.end()) {
        const TrackData& data = s.store->data(track);
        if (!data.slices.empty()) {
          d.slices = QuerySlices(data.slices, t0, t1, pixels);
        }
        if (data.instants.size() > 0) {
          d.instants = QueryInstants(data.instants, t0, t1, pixels);
        }
        if (data.counters.size() > 0) {
          d.counter = QueryCounter(data.counters, t0, t1, pixels);
        }
      }
      PaintTrack(plot, s, *shown[i], d, &outs[i]);
    }
  };
  const auto tracks_start = std::chrono::steady_clock::now();
  if (shown.size() >= 2 && std::thread::hardware_concurrency() >= 2) {
    std::thread helper(work);
    work();
    helper.join();
  } else {
    work();
  }
  frame_.tracks_ms = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - tracks_start)
                         .count();
  frame_.queried = missing.size();
  frame_.tracks = shown.size();
  {
    const QFontMetricsF metrics(font_);
    const double ascent = metrics.ascent();
    const double text_height = metrics.height();
    for (TrackOut& out : outs) {
      frame_.boxes += out.boxes;
      for (const PendingLabel& pl : out.pending) {
        Label label;
        label.color = pl.color;
        label.at = QPointF(
            plot.x() + pl.x + 3,
            plot.y() + pl.lane_y +
                (TrackLayout::kLaneHeight - 1 - text_height) / 2 + ascent);
        if (TextWidth(pl.name) <= pl.room) {
          label.text = NameText(pl.name);
        } else {
          label.text =
              metrics.elidedText(NameText(pl.name), Qt::ElideRight, pl.room);
          if (label.text.size() <= 1) continue;
        }
        labels_.push_back(std::move(label));
        ++frame_.labels;
      }
      for (Label& l : out.labels) labels_.push_back(std::move(l));
      for (QPolygonF& line : out.lines)
        counter_lines_.push_back(std::move(line));
    }
  }
  // Row separators over the content.
  for (int r = first_row; r < last_row; ++r) {
    const int y = rows[r].y - s.scroll_y + rows[r].height - 1;
    canvas_.Fill(0, y, plot.width(), 1, kSeparator.rgb());
  }
  p.drawImage(plot.topLeft(), canvas_.image());
  if (!cache_enabled_) InvalidateCache();

  p.setClipRect(plot);
  for (const Label& label : labels_) {
    p.setPen(QColor::fromRgb(label.color));
    p.drawText(label.at, label.text);
  }
  p.setPen(QPen(kCounterLine, 1));
  for (const QPolygonF& line : counter_lines_) p.drawPolyline(line);

  if (s.hovered && s.hovered != s.selected) {
    PaintSelection(p, plot, s, *s.hovered, false);
  }
  if (s.selected) {
    PaintFlows(p, plot, s);
    PaintSelection(p, plot, s, *s.selected, true);
  }
  if (s.cursor_ns) {
    const double x = s.axis.TimeToX(*s.cursor_ns);
    p.fillRect(QRectF(plot.x() + std::floor(x), plot.y(), 1, plot.height()),
               QColor(0, 0, 0, 60));
  }
  p.setClipping(false);
  PaintRange(p, area, s);
  PaintLabels(p, area, s, first_row, last_row);
  PaintRuler(p, area, s);
  p.restore();
  frame_.total_ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - paint_start)
                        .count();
}

void TimelineRenderer::PaintTrack(const QRect& plot, const TimelineState& s,
                                  const LayoutRow& row, const TrackDraw& draw,
                                  TrackOut* out) {
  // Plot coordinates: the canvas' origin is the plot's top left.
  const int row_y = row.y - s.scroll_y;
  const double scale = plot.width() / static_cast<double>(s.axis.span());
  const int64_t t0 = s.axis.t0();
  const int right = plot.width();
  if (row.slice_top >= 0) {
    for (const VisibleSlice& v : draw.slices) {
      const int lane_y = row_y + row.slice_top +
                         static_cast<int>(v.depth) * TrackLayout::kLaneHeight;
      if (lane_y + TrackLayout::kLaneHeight < 0 || lane_y > plot.height()) {
        continue;
      }
      const double x0 = Since(v.start_ns, t0) * scale;
      const double x1 = x0 + static_cast<double>(v.duration_ns) * scale;
      int ix0 = static_cast<int>(std::floor(std::max(x0, -2.0)));
      int ix1 = static_cast<int>(std::floor(std::min(x1, right + 2.0)));
      if (ix1 <= ix0) ix1 = ix0 + 1;
      int w = ix1 - ix0;
      if (w >= 4) --w;  // a gap between neighbours
      const QRgb color = RgbOf(v.name);
      ++out->boxes;
      canvas_.Fill(ix0, lane_y, w, TrackLayout::kLaneHeight - 1, color);
      if (w < kMinTextBoxWidth) continue;
      // The label stays in view when the box starts left of the window.
      const int vis0 = std::max(ix0, 0);
      const int vis1 = std::min(ix0 + w, right);
      const double room = vis1 - vis0 - 6;
      if (room < 12) continue;
      out->pending.push_back({v.name, vis0, lane_y, room,
                              PrefersLightText(color & 0xFFFFFF)
                                  ? qRgb(255, 255, 255)
                                  : kText.rgb()});
    }
  }
  if (row.instant_lane >= 0) {
    const int y = row_y + row.instant_lane;
    for (const VisibleInstant& v : draw.instants) {
      canvas_.Fill(static_cast<int>(v.pixel) - 1, y + 1, 3,
                   TrackLayout::kInstantLaneHeight - 2,
                   ColorOf(v.name).darker(130).rgb());
      ++out->boxes;
    }
  }
  if (row.sample_lane >= 0) {
    PaintSamples(plot, s, row, row_y + row.sample_lane, out);
  }
  if (row.counter_top >= 0) {
    PaintCounter(plot, s, row, draw, row_y + row.counter_top, out);
  }
}

void TimelineRenderer::PaintSamples(const QRect& plot, const TimelineState& s,
                                    const LayoutRow& row, int top,
                                    TrackOut* out) {
  const auto& ts = s.store->data(row.track).samples.ts;
  const uint32_t pixels = static_cast<uint32_t>(plot.width());
  const PixelGrid grid(s.axis.t0(), s.axis.t1(), pixels);
  auto it = std::lower_bound(ts.begin(), ts.end(), s.axis.t0());
  while (it != ts.end() && *it < s.axis.t1()) {
    const uint32_t px = grid.PixelOf(*it);
    canvas_.Fill(static_cast<int>(px), top + 1, 1,
                 TrackLayout::kSampleLaneHeight - 2, kSample.rgb());
    ++out->boxes;
    if (px + 1 >= pixels) break;
    it = std::lower_bound(it, ts.end(), grid.Bound(px + 1));
  }
}

void TimelineRenderer::PaintCounter(const QRect& plot, const TimelineState& s,
                                    const LayoutRow& row, const TrackDraw& draw,
                                    int top, TrackOut* out) {
  const CounterView& view = draw.counter;
  const auto [lo, hi] = CounterScale(row.track);
  const int h = TrackLayout::kCounterHeight - 4;
  // Plot coordinates for the canvas; the line is drawn later in widget
  // coordinates.
  auto y_of = [&, lo = lo, hi = hi](double v) {
    const double f = (v - lo) / (hi - lo);
    return top + 2 + h - std::clamp(f, 0.0, 1.0) * h;
  };
  QPolygonF line;
  bool have = view.has_before;
  double last = view.before;
  if (have) line << QPointF(0, y_of(last));
  for (const CounterPixel& px : view.pixels) {
    const double x = px.pixel;
    if (have) line << QPointF(x, y_of(last));
    const double ymin = y_of(px.max), ymax = y_of(px.min);
    canvas_.Blend(static_cast<int>(x), static_cast<int>(ymin), 1,
                  std::max(1, static_cast<int>(std::ceil(ymax - ymin))),
                  kCounterFill.rgba());
    last = px.last;
    have = true;
    line << QPointF(x, y_of(last));
  }
  if (have) line << QPointF(plot.width(), y_of(last));
  line.translate(plot.x(), plot.y());
  out->boxes += view.pixels.size();
  const TrackInfo& info = s.store->tracks()[row.track];
  const QString scale =
      QStringLiteral("max ") + QString::fromStdString(FormatValue(hi, info.unit));
  out->labels.push_back(
      {QPointF(plot.x() + 4, plot.y() + top + 11), scale, kDimText.rgb()});
  out->lines.push_back(std::move(line));
}

std::optional<QRectF> TimelineRenderer::EventRect(const QRect& plot,
                                                  const TimelineState& s,
                                                  const EventRef& e) const {
  const int r = s.layout->RowOfTrack(e.track);
  if (r < 0) return std::nullopt;
  const LayoutRow& row = s.layout->rows()[r];
  const double scale = plot.width() / static_cast<double>(s.axis.span());
  const double x0 = plot.x() + Since(s.store->StartOf(e), s.axis.t0()) * scale;
  const int row_y = plot.y() + row.y - s.scroll_y;
  if (e.kind == EventKind::kSlice) {
    if (row.slice_top < 0) return std::nullopt;
    const double w =
        std::max(2.0, static_cast<double>(s.store->DurationOf(e)) * scale);
    const int y =
        row_y + row.slice_top +
        static_cast<int>(DepthOf(*s.store, e)) * TrackLayout::kLaneHeight;
    return QRectF(x0, y, w, TrackLayout::kLaneHeight - 1);
  }
  if (row.instant_lane < 0) return std::nullopt;
  return QRectF(x0 - 2, row_y + row.instant_lane, 5,
                TrackLayout::kInstantLaneHeight - 1);
}

void TimelineRenderer::PaintSelection(QPainter& p, const QRect& plot,
                                      const TimelineState& s, const EventRef& e,
                                      bool strong) {
  auto rect = EventRect(plot, s, e);
  if (!rect) return;
  // Keep the outline drawable when the event runs far past the window.
  QRectF r = rect->intersected(QRectF(plot).adjusted(-4, -4, 4, 4));
  if (r.isEmpty()) r = *rect;
  p.setRenderHint(QPainter::Antialiasing, false);
  if (strong) {
    p.setPen(QPen(kSelection, 2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
    p.setPen(QPen(Qt::white, 1));
    p.drawRect(r.adjusted(2, 2, -2, -2));
  } else {
    p.setPen(QPen(QColor(0, 0, 0, 140), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r.adjusted(0, 0, -1, -1));
  }
}

void TimelineRenderer::PaintFlows(QPainter& p, const QRect& plot,
                                  const TimelineState& s) {
  const EventRef selected = *s.selected;
  const auto ends = s.store->Flows(selected);
  if (ends.empty()) return;
  const double scale = plot.width() / static_cast<double>(s.axis.span());
  auto point_of = [&](const EventRef& e,
                      bool at_end) -> std::optional<QPointF> {
    const double x = plot.x() + Since(s.store->StartOf(e) +
                                          (at_end ? s.store->DurationOf(e) : 0),
                                      s.axis.t0()) *
                                    scale;
    if (auto r = EventRect(plot, s, e)) return QPointF(x, r->center().y());
    // Hidden under a collapsed header: point at the header.
    const TrackInfo& t = s.store->tracks()[e.track];
    const ProcessInfo& proc = s.store->processes()[t.process];
    for (const LayoutRow& row : s.layout->rows()) {
      if ((row.kind == RowKind::kProcess && row.process == t.process) ||
          (row.kind == RowKind::kHost && row.host == proc.host &&
           row.collapsed)) {
        return QPointF(x, plot.y() + row.y - s.scroll_y + row.height / 2.0);
      }
    }
    return std::nullopt;
  };
  p.setRenderHint(QPainter::Antialiasing, true);
  for (const TraceStore::FlowEnd& end : ends) {
    // The flow runs from its begin towards its end: an end whose phase is
    // kBegin is upstream of the selected event.
    const bool incoming = end.phase == trace_format::FlowPhase::kBegin;
    const EventRef from_e = incoming ? end.event : selected;
    const EventRef to_e = incoming ? selected : end.event;
    const auto from = point_of(from_e, false);
    const auto to = point_of(to_e, false);
    if (!from || !to) continue;
    QPainterPath path(*from);
    const double dx = std::max(30.0, std::fabs(to->x() - from->x()) / 2);
    path.cubicTo(from->x() + dx, from->y(), to->x() - dx, to->y(), to->x(),
                 to->y());
    p.setPen(QPen(kFlow, 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    // The arrow head along the curve's last direction (horizontal).
    QPolygonF head;
    head << *to << QPointF(to->x() - 8, to->y() - 4)
         << QPointF(to->x() - 8, to->y() + 4);
    p.setBrush(kFlow);
    p.drawPolygon(head);
    p.setBrush(Qt::NoBrush);
    p.setPen(QPen(kFlow, 1));
    p.drawEllipse(*from, 3, 3);
  }
  p.setRenderHint(QPainter::Antialiasing, false);
}

void TimelineRenderer::PaintRange(QPainter& p, const QRect& area,
                                  const TimelineState& s) {
  if (!s.range) return;
  const QRect plot = PlotRect(area);
  const double x0 = plot.x() + s.axis.TimeToX(s.range->first);
  const double x1 = plot.x() + s.axis.TimeToX(s.range->second);
  const double l = std::max<double>(x0, plot.x());
  const double r = std::min<double>(x1, plot.right() + 1);
  if (r > l) {
    p.fillRect(QRectF(l, area.y(), r - l, area.height()), kRangeFill);
  }
  for (double x : {x0, x1}) {
    if (x >= plot.x() && x <= plot.right() + 1) {
      p.fillRect(QRectF(std::floor(x), area.y(), 1, area.height()), kRangeEdge);
    }
  }
}

void TimelineRenderer::PaintLabels(QPainter& p, const QRect& area,
                                   const TimelineState& s, int first_row,
                                   int last_row) {
  const QRect labels = LabelRect(area);
  p.fillRect(labels, kGutter);
  p.setClipRect(labels);
  const QFontMetricsF metrics(font_);
  const QFontMetricsF bold_metrics(bold_font_);
  const auto& rows = s.layout->rows();
  for (int r = first_row; r < last_row; ++r) {
    const LayoutRow& row = rows[r];
    const int y = labels.y() + row.y - s.scroll_y;
    const int indent = 6 + row.level * 12;
    QColor bg = row.kind == RowKind::kHost      ? kHostRow
                : row.kind == RowKind::kProcess ? kProcessRow
                                                : kGutter;
    p.fillRect(labels.x(), y, labels.width(), row.height, bg);
    p.fillRect(labels.x(), y + row.height - 1, labels.width(), 1, kSeparator);
    const int text_y = y + std::min(row.height, TrackLayout::kHostHeight) / 2;
    QString text, note;
    QColor note_color = kDimText;
    if (row.kind != RowKind::kTrack) {
      // The disclosure triangle.
      p.setRenderHint(QPainter::Antialiasing, true);
      p.setPen(Qt::NoPen);
      p.setBrush(kDimText);
      const double cx = labels.x() + indent + 4, cy = text_y;
      QPolygonF tri;
      if (row.collapsed) {
        tri << QPointF(cx - 3, cy - 5) << QPointF(cx + 4, cy)
            << QPointF(cx - 3, cy + 5);
      } else {
        tri << QPointF(cx - 5, cy - 3) << QPointF(cx + 5, cy - 3)
            << QPointF(cx, cy + 4);
      }
      p.drawPolygon(tri);
      p.setBrush(Qt::NoBrush);
      p.setRenderHint(QPainter::Antialiasing, false);
    }
    int x = labels.x() + indent + (row.kind == RowKind::kTrack ? 0 : 14);
    if (row.kind == RowKind::kHost) {
      const HostInfo& h = s.store->hosts()[row.host];
      text = QString::fromStdString(h.name.empty() ? "(unnamed host)" : h.name);
      size_t tracks = 0;
      for (ProcessId pid : h.processes) {
        tracks += s.store->processes()[pid].tracks.size();
      }
      note = QStringLiteral("%1 process%2 · %3 tracks")
                 .arg(h.processes.size())
                 .arg(h.processes.size() == 1 ? "" : "es")
                 .arg(tracks);
      for (ProcessId pid : h.processes) {
        if (pid < process_damaged_.size() && process_damaged_[pid]) {
          note = QStringLiteral("⚠ damaged file");
          note_color = kWarning;
        }
      }
      p.setFont(bold_font_);
      p.setPen(kText);
      const QString shown =
          bold_metrics.elidedText(text, Qt::ElideRight, labels.right() - x - 4);
      p.drawText(QPointF(x, text_y + bold_metrics.ascent() / 2 - 1), shown);
      x += static_cast<int>(bold_metrics.horizontalAdvance(shown)) + 8;
      p.setFont(font_);
    } else if (row.kind == RowKind::kProcess) {
      const ProcessInfo& proc = s.store->processes()[row.process];
      text = QStringLiteral("pid %1").arg(proc.pid);
      if (proc.process_index >= 0) {
        text += QStringLiteral(" · process %1").arg(proc.process_index);
        if (proc.process_count > 0) {
          text += QStringLiteral("/%1").arg(proc.process_count);
        }
      }
      if (row.process < process_damaged_.size() &&
          process_damaged_[row.process]) {
        note = QStringLiteral("⚠ partial");
        note_color = kWarning;
      } else if (!proc.clock_aligned && s.store->processes().size() > 1) {
        note = QStringLiteral("own clock");
        note_color = kWarning;
      }
      p.setPen(kText);
      p.drawText(QPointF(x, text_y + metrics.ascent() / 2 - 1), text);
      x += static_cast<int>(metrics.horizontalAdvance(text)) + 8;
    } else {
      const TrackInfo& t = s.store->tracks()[row.track];
      text = QString::fromStdString(t.name);
      if (t.kind == proto::TRACK_KIND_DEVICE_STREAM) {
        note = QStringLiteral("device %1").arg(t.device_id);
      } else if (t.kind == proto::TRACK_KIND_COUNTER && !t.unit.empty()) {
        note = QString::fromStdString(t.unit);
      }
      if (t.dropped > 0) {
        note = QStringLiteral("⚠ %1 dropped").arg(t.dropped);
        note_color = kWarning;
      }
      const double note_w =
          note.isEmpty() ? 0 : metrics.horizontalAdvance(note) + 8;
      const double room = std::max(20.0, labels.right() - x - 6 - note_w);
      const QString shown = metrics.elidedText(text, Qt::ElideRight, room);
      p.setPen(kText);
      const int ty = y + std::min(row.height, 2 * TrackLayout::kLaneHeight) / 2;
      p.drawText(QPointF(x, ty + metrics.ascent() / 2 - 1), shown);
      x += static_cast<int>(metrics.horizontalAdvance(shown)) + 8;
      if (!note.isEmpty()) {
        p.setFont(small_font_);
        p.setPen(note_color);
        p.drawText(QPointF(x, ty + metrics.ascent() / 2 - 1), note);
        p.setFont(font_);
      }
      continue;
    }
    if (!note.isEmpty()) {
      p.setFont(small_font_);
      p.setPen(note_color);
      p.drawText(QPointF(x, text_y + metrics.ascent() / 2 - 1),
                 QFontMetricsF(small_font_)
                     .elidedText(note, Qt::ElideRight, labels.right() - x - 4));
      p.setFont(font_);
    }
  }
  p.setClipping(false);
  p.fillRect(labels.right(), labels.y(), 1, labels.height(), kSeparator);
}

void TimelineRenderer::PaintRuler(QPainter& p, const QRect& area,
                                  const TimelineState& s) {
  const QRect bar(area.x(), area.y(), area.width(), kRulerHeight);
  const QRect plot = PlotRect(area);
  p.fillRect(bar, kRulerBg);
  p.fillRect(bar.x(), bar.bottom(), bar.width(), 1, kSeparator);
  const Ruler ruler = ChooseRuler(s.axis, s.store->first_ns(), 110);
  const QFontMetricsF metrics(small_font_);
  p.setFont(small_font_);
  p.setClipRect(QRect(plot.x(), bar.y(), plot.width(), bar.height()));
  for (const RulerTick& tick : ruler.ticks) {
    const int x = plot.x() + static_cast<int>(std::floor(tick.x));
    p.fillRect(x, bar.bottom() - 8, 1, 8, kDimText);
    p.setPen(kText);
    p.drawText(QPointF(x + 3, bar.bottom() - 10),
               QString::fromStdString(tick.label));
  }
  // The duration of the selected range, over it.
  if (s.range) {
    const double x0 = plot.x() + s.axis.TimeToX(s.range->first);
    const double x1 = plot.x() + s.axis.TimeToX(s.range->second);
    const QString text = QString::fromStdString(
        FormatDuration(s.range->second - s.range->first));
    const double w = metrics.horizontalAdvance(text) + 10;
    double cx = (x0 + x1) / 2;
    cx = std::clamp<double>(cx, plot.x() + w / 2, plot.right() - w / 2);
    const QRectF box(cx - w / 2, bar.y() + 2, w, metrics.height() + 2);
    p.fillRect(box, kRangeEdge);
    p.setPen(Qt::white);
    p.drawText(box, Qt::AlignCenter, text);
  }
  if (s.cursor_ns) {
    const double x = plot.x() + s.axis.TimeToX(*s.cursor_ns);
    const QString text = QString::fromStdString(
        FormatRulerTime(ruler, *s.cursor_ns - s.store->first_ns()));
    const double w = metrics.horizontalAdvance(text) + 8;
    const QRectF box(std::min<double>(x, plot.right() - w), bar.y() + 2, w,
                     metrics.height() + 2);
    if (!s.range) {
      p.fillRect(box, QColor(0x40, 0x44, 0x4C));
      p.setPen(Qt::white);
      p.drawText(box, Qt::AlignCenter, text);
    }
  }
  p.setClipping(false);
  // The window's span, over the labels.
  p.setPen(kDimText);
  p.drawText(QRect(area.x() + 6, bar.y(), kLabelWidth - 12, bar.height()),
             Qt::AlignVCenter | Qt::AlignLeft,
             QStringLiteral("window %1")
                 .arg(QString::fromStdString(FormatDuration(s.axis.span()))));
  p.setFont(font_);
}

}  // namespace podscope::viewer::app
