#include "timeline_renderer.h"

#include <algorithm>
#include <chrono>

#include "podscope/base/parallel.h"
#include "podscope/viewer/lod.h"
#include "render_passes.h"

namespace podscope::viewer::app {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

render::TrackQuery Query(const TrackData& data, int64_t t0, int64_t t1,
                         uint32_t pixels) {
  render::TrackQuery q;
  if (!data.slices.empty()) {
    // With how busy each depth is where a box stands for several slices.
    q.slices = QuerySlices(data.slices, t0, t1, pixels, &q.busy);
  }
  if (data.instants.size() > 0) {
    q.instants = QueryInstants(data.instants, t0, t1, pixels);
  }
  if (data.counters.size() > 0) {
    q.counter = QueryCounter(data.counters, t0, t1, pixels);
  }
  return q;
}

}  // namespace

void TimelineRenderer::InvalidateCache() {
  queries_.clear();
  cache_store_ = nullptr;
}

void TimelineRenderer::SetStore(const TraceStore* store) {
  cache_.Reset(store, fonts_.normal);
}

void TimelineRenderer::Prepare(const QSize& area) {
  const QSize plot = render::PlotRect(QRect(QPoint(0, 0), area)).size();
  if (canvas_.image().size() != plot) {
    canvas_.Reset(plot, render::kBackground.rgb());
  }
  if (!glyphs_ready_) {
    render::PrepareGlyphs(fonts_);
    glyphs_ready_ = true;
  }
}

std::vector<render::TrackOut> TimelineRenderer::PaintTracks(
    const render::Frame& f) {
  const TimelineState& s = *f.s;
  const uint32_t pixels = f.pixels();
  const int64_t t0 = s.axis.t0(), t1 = s.axis.t1();
  if (!cache_enabled_ || cache_store_ != s.store || cache_t0_ != t0 ||
      cache_t1_ != t1 || cache_pixels_ != pixels) {
    queries_.clear();
    cache_store_ = s.store;
    cache_t0_ = t0;
    cache_t1_ = t1;
    cache_pixels_ = pixels;
  }
  queries_.resize(s.store->tracks().size());
  const auto& rows = s.layout->rows();
  std::vector<const LayoutRow*> shown;
  std::vector<uint8_t> missing;
  for (int r = f.first_row; r < f.last_row; ++r) {
    if (rows[r].kind != RowKind::kTrack) continue;
    shown.push_back(&rows[r]);
    missing.push_back(queries_[rows[r].track] == nullptr);
    if (missing.back()) {
      queries_[rows[r].track] = std::make_unique<render::TrackQuery>();
      ++frame_.queried;
    }
  }
  std::vector<render::TrackOut> outs(shown.size());
  // Two painting threads (this one and one more) where there are cores.
  base::ParallelFor(
      std::min(2, base::HardwareThreads()), shown.size(), [&](size_t i) {
        const LayoutRow& row = *shown[i];
        render::TrackQuery& q = *queries_[row.track];
        if (missing[i]) q = Query(s.store->data(row.track), t0, t1, pixels);
        render::PaintSlices(f, row, q, cache_, &canvas_, &outs[i]);
        render::PaintInstants(f, row, q, cache_, &canvas_, &outs[i]);
        render::PaintSamples(f, row, &canvas_, &outs[i]);
        render::PaintCounter(f, row, q, cache_, &canvas_, &outs[i]);
      });
  frame_.tracks = shown.size();
  if (!cache_enabled_) InvalidateCache();
  return outs;
}

void TimelineRenderer::Paint(QPainter& p, const QRect& area,
                             const TimelineState& s) {
  const auto paint_start = std::chrono::steady_clock::now();
  frame_ = {};
  p.save();
  if (s.store == nullptr || s.layout == nullptr || s.layout->rows().empty()) {
    render::PaintEmpty(p, area, s, fonts_);
    p.restore();
    return;
  }
  if (cache_.store() != s.store) SetStore(s.store);
  p.fillRect(area, render::kBackground);
  p.setFont(fonts_.normal);
  const render::Frame f(area, s);

  auto lap = std::chrono::steady_clock::now();
  auto split = [&lap](double* ms) {
    const auto now = std::chrono::steady_clock::now();
    *ms = std::chrono::duration<double, std::milli>(now - lap).count();
    lap = now;
  };
  canvas_.Reset(f.plot.size(), render::kBackground.rgb());
  render::PaintRowBackgrounds(f, &canvas_);
  render::PaintOverviewRows(f, &canvas_);
  render::PaintCollapsedRows(f, &canvas_);
  split(&frame_.canvas_ms);
  const std::vector<render::TrackOut> outs = PaintTracks(f);
  for (const render::TrackOut& out : outs) frame_.boxes += out.boxes;
  render::PaintRowSeparators(f, &canvas_);
  split(&frame_.tracks_ms);
  const std::vector<render::Label> labels =
      render::ResolveLabels(f, outs, fonts_, cache_, &frame_.labels);
  split(&frame_.text_ms);
  p.drawImage(f.plot.topLeft(), canvas_.image());
  split(&frame_.compose_ms);
  double draw_text_ms = 0;
  render::DrawTexts(p, f, labels, outs);
  split(&draw_text_ms);
  frame_.text_ms += draw_text_ms;
  render::PaintStepBands(p, f, fonts_);
  render::PaintDoctorMarks(p, f, fonts_);
  render::PaintHover(p, f);
  render::PaintFlows(p, f);
  render::PaintSelection(p, f);
  render::PaintCursor(p, f);
  render::PaintRange(p, f);
  render::PaintTrackTree(p, f, fonts_, cache_);
  render::PaintAxis(p, f, fonts_);
  split(&frame_.overlay_ms);
  p.restore();
  frame_.total_ms = MsSince(paint_start);
}

}  // namespace podscope::viewer::app
