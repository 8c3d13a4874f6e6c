#include "render_context.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <span>

#include "hit_test.h"
#include "name_colors.h"

namespace podscope::viewer::app::render {

Fonts::Fonts() {
  normal.setPointSizeF(8.5);
  bold = normal;
  bold.setBold(true);
  small = normal;
  small.setPointSizeF(7.5);
}

void PrepareGlyphs(const Fonts& fonts) {
  QString ascii;
  for (char16_t c = 0x20; c < 0x7F; ++c) ascii += QChar(c);
  // The symbols the track tree and axis draw besides ASCII.
  ascii += QStringLiteral("·…⚠µ›");
  QImage scratch(QSize(16, 16), QImage::Format_ARGB32_Premultiplied);
  scratch.fill(Qt::transparent);
  QPainter p(&scratch);
  for (const QFont* font : {&fonts.normal, &fonts.bold, &fonts.small}) {
    p.setFont(*font);
    for (const QColor& pen : {kText, QColor(Qt::white)}) {
      p.setPen(pen);
      p.drawText(QPointF(-2000, 10), ascii);
      p.drawText(QPointF(0, 10), ascii);
    }
  }
}

QRect PlotRect(const QRect& area) {
  return QRect(area.x() + kLabelWidth, area.y() + kRulerHeight,
               std::max(1, area.width() - kLabelWidth),
               std::max(1, area.height() - kRulerHeight));
}

QRect LabelRect(const QRect& area) {
  return QRect(area.x(), area.y() + kRulerHeight, kLabelWidth,
               std::max(1, area.height() - kRulerHeight));
}

Frame::Frame(const QRect& area_in, const TimelineState& state)
    : area(area_in),
      plot(PlotRect(area_in)),
      s(&state),
      ruler(ChooseRuler(state.axis, state.store->first_ns(), 110)) {
  const TrackLayout& layout = *state.layout;
  const auto& rows = layout.rows();
  const int top = std::max(0, state.scroll_y);
  const int bottom = state.scroll_y + plot.height();
  first_row = layout.RowAt(top);
  if (first_row < 0) first_row = static_cast<int>(rows.size());
  last_row = first_row;
  while (last_row < static_cast<int>(rows.size()) &&
         rows[last_row].y < bottom) {
    ++last_row;
  }
}

double Since(int64_t t, int64_t t0) {
  int64_t d;
  if (__builtin_sub_overflow(t, t0, &d)) return t > t0 ? 9.2e18 : -9.2e18;
  return static_cast<double>(d);
}

std::optional<QRectF> EventRect(const Frame& f, const EventRef& e) {
  const TimelineState& s = *f.s;
  const int r = s.layout->RowOfTrack(e.track);
  if (r < 0) return std::nullopt;
  const LayoutRow& row = s.layout->rows()[r];
  const double scale = f.plot.width() / static_cast<double>(s.axis.span());
  const double x0 =
      f.plot.x() + Since(s.store->StartOf(e), s.axis.t0()) * scale;
  const int row_y = f.plot.y() + row.y - s.scroll_y;
  if (e.kind == trace_format::EventKind::kSlice) {
    if (row.slice_top < 0) return std::nullopt;
    const double w =
        std::max(2.0, static_cast<double>(s.store->DurationOf(e)) * scale);
    const int depth = std::min<int>(static_cast<int>(DepthOf(*s.store, e)),
                                    static_cast<int>(row.depths) - 1);
    const int y = row_y + row.slice_top + std::max(depth, 0) * row.lane_height;
    return QRectF(x0, y, w, row.lane_height - 1);
  }
  if (row.instant_lane < 0) return std::nullopt;
  return QRectF(x0 - 2, row_y + row.instant_lane, 5,
                TrackLayout::kInstantLaneHeight - 1);
}

void Canvas::Reset(const QSize& size, QRgb fill) {
  if (image_.size() != size) image_ = QImage(size, QImage::Format_RGB32);
  image_.fill(fill);
  bits_ = image_.bits();
  stride_ = image_.bytesPerLine();
}

void Canvas::Fill(int x, int y, int w, int h, QRgb color) {
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

void Canvas::FillRow(int x, int y, int h, std::span<const QRgb> colors) {
  const int w = static_cast<int>(colors.size());
  const int x0 = std::max(x, 0), x1 = std::min(x + w, image_.width());
  const int y0 = std::max(y, 0), y1 = std::min(y + h, image_.height());
  if (x0 >= x1 || y0 >= y1) return;
  const QRgb* from = colors.data() + (x0 - x);
  const int width = x1 - x0;
  for (uchar* row = bits_ + y0 * stride_; row < bits_ + y1 * stride_;
       row += stride_) {
    QRgb* p = reinterpret_cast<QRgb*>(row) + x0;
    for (int i = 0; i < width; ++i) p[i] = from[i];
  }
}

void Canvas::Blend(int x, int y, int w, int h, QRgb color) {
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

void StoreCache::Reset(const TraceStore* store, const QFont& font) {
  store_ = store;
  font_ = font;
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

QRgb StoreCache::Rgb(StringId name) {
  if (name >= color_count_) {
    return 0xFF000000u | NameColorRgb(store_ ? store_->str(name) : "");
  }
  QRgb c = colors_[name].load(std::memory_order_relaxed);
  if (c == 0) {
    // Several threads may compute it; they get the same value.
    c = 0xFF000000u | NameColorRgb(store_->str(name));
    colors_[name].store(c, std::memory_order_relaxed);
  }
  return c;
}

const QString& StoreCache::Text(StringId name) {
  static const QString kEmpty;
  if (name >= names_.size()) return kEmpty;
  if (!has_name_[name]) {
    const std::string_view s = store_->str(name);
    names_[name] = QString::fromUtf8(s.data(), static_cast<int>(s.size()));
    has_name_[name] = 1;
  }
  return names_[name];
}

float StoreCache::TextWidth(StringId name) {
  if (name >= text_widths_.size()) return 0;
  if (text_widths_[name] < 0) {
    text_widths_[name] =
        static_cast<float>(QFontMetricsF(font_).horizontalAdvance(Text(name)));
  }
  return text_widths_[name];
}

std::pair<double, double> StoreCache::CounterScale(TrackId track) {
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

}  // namespace podscope::viewer::app::render
