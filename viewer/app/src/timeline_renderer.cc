#include "timeline_renderer.h"

#include <algorithm>
#include <chrono>

#include "podscope/base/parallel.h"
#include "podscope/viewer/lod.h"
#include "render_passes.h"
#include "track_layout.h"

namespace podscope::viewer::app {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

// Fills `q` (emptied, its room kept) for the window.
void Query(const TrackData& data, int64_t t0, int64_t t1, uint32_t pixels,
           SliceQueryScratch* scratch, render::TrackQuery* q) {
  if (!data.slices.empty()) {
    // With how busy each depth is where a box stands for several slices.
    QuerySlicesInto(data.slices, t0, t1, pixels, scratch, &q->slices, &q->busy);
  }
  if (data.instants.size() > 0) {
    q->instants = QueryInstants(data.instants, t0, t1, pixels);
  }
  if (data.counters.size() > 0) {
    q->counter = QueryCounter(data.counters, t0, t1, pixels);
  }
}

// Empties `q` for another track or window, keeping its room.
void Recycle(render::TrackQuery* q) {
  q->slices.clear();
  q->instants.clear();
  q->counter = {};
  for (std::vector<float>& b : q->busy) b.clear();
}

// The painting threads: this one and one more where there are cores.
int PaintingThreads() { return std::min(2, base::HardwareThreads()); }

}  // namespace

void TimelineRenderer::InvalidateCache() {
  for (std::unique_ptr<render::TrackQuery>& q : queries_) {
    if (q == nullptr) continue;
    Recycle(q.get());
    spare_.push_back(std::move(q));
  }
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
  PrepareQueries(static_cast<uint32_t>(std::max(plot.width(), 0)),
                 plot.height());
}

void TimelineRenderer::PrepareQueries(uint32_t pixels, int height) {
  // The memory a zoomed-out frame's queries fill: written once here, and
  // kept from frame to frame, so that no frame waits for the system to
  // hand it fresh pages (on a virtual machine a first touch costs about
  // 10 us a page, and a zoomed-out frame of 12 deep tracks fills some
  // 600 pages of results).
  const TraceStore* store = cache_.store();
  if (store == nullptr || pixels == 0) return;
  scratch_.resize(static_cast<size_t>(PaintingThreads()));
  for (SliceQueryScratch& s : scratch_) s.Reserve(pixels);
  // As many slice tracks as the height shows, at full lanes, with as many
  // of their depths as it shows.
  const int lanes = std::max(height / TrackLayout::kLaneHeight, 1);
  uint32_t deepest = 0;
  size_t tracks = 0;
  for (TrackId t = 0; t < store->tracks().size(); ++t) {
    const uint32_t depths = store->data(t).slices.depth_count();
    if (depths == 0) continue;
    deepest = std::max(deepest, depths);
    ++tracks;
  }
  if (deepest == 0) return;  // no slices to show
  const uint32_t depths =
      std::min(deepest, static_cast<uint32_t>(std::min(lanes, 16)));
  const size_t wanted =
      std::min(tracks, static_cast<size_t>(lanes + depths - 1) / depths);
  while (spare_.size() + queries_.size() < wanted) {
    spare_.push_back(std::make_unique<render::TrackQuery>());
  }
  for (std::unique_ptr<render::TrackQuery>& q : spare_) {
    ReserveSliceQuery(pixels, depths, &q->slices, &q->busy);
  }
}

std::vector<render::TrackOut> TimelineRenderer::PaintTracks(
    const render::Frame& f) {
  const TimelineState& s = *f.s;
  const uint32_t pixels = f.pixels();
  const int64_t t0 = s.axis.t0(), t1 = s.axis.t1();
  if (!cache_enabled_ || cache_store_ != s.store || cache_t0_ != t0 ||
      cache_t1_ != t1 || cache_pixels_ != pixels) {
    InvalidateCache();
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
      // The room an earlier query left, when there is one.
      if (!spare_.empty()) {
        queries_[rows[r].track] = std::move(spare_.back());
        spare_.pop_back();
      } else {
        queries_[rows[r].track] = std::make_unique<render::TrackQuery>();
      }
      ++frame_.queried;
    }
  }
  std::vector<render::TrackOut> outs(shown.size());
  const size_t threads = base::WorkerCount(PaintingThreads(), shown.size());
  if (scratch_.size() < threads) scratch_.resize(threads);
  // Each painting thread queries in its own scratch.
  base::ParallelForWorkers(
      PaintingThreads(), shown.size(), [&](size_t worker, size_t i) {
        const LayoutRow& row = *shown[i];
        render::TrackQuery& q = *queries_[row.track];
        if (missing[i]) {
          Query(s.store->data(row.track), t0, t1, pixels, &scratch_[worker],
                &q);
        }
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
