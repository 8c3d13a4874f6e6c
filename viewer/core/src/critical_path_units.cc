#include "critical_path_units.h"

#include <algorithm>
#include <limits>

#include "analysis_pod_util.h"

namespace podscope::viewer::cp {
namespace {

// The units of one track in [w0, w1): on the thread that holds the rank's
// step slices, the direct children of the steps; elsewhere the outermost
// slices. Empty slices carry no time and are left out.
void CollectUnits(const TraceStore& store, TrackId track, uint32_t depth,
                  int64_t w0, int64_t w1, std::vector<Unit>* units) {
  std::vector<Unit>& out = *units;
  out.clear();
  const SliceColumns& s = store.data(track).slices;
  if (depth >= s.depth_count()) return;
  uint32_t lo = s.depth_begin(depth), hi = s.depth_end(depth);
  // Ends ascend within a depth: the first slice ending after w0.
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (s.end(mid) <= w0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  for (uint32_t i = lo; i < s.depth_end(depth) && s.start(i) < w1; ++i) {
    const int64_t a = std::max(s.start(i), w0), b = std::min(s.end(i), w1);
    if (b <= a) continue;
    out.push_back({a, b, {track, trace_format::EventKind::kSlice, i}});
  }
}

}  // namespace

std::pair<int64_t, int64_t> StepWindow(const StepBreakdown& steps, int row) {
  int64_t w0 = std::numeric_limits<int64_t>::max();
  int64_t w1 = std::numeric_limits<int64_t>::min();
  if (row < 0 || static_cast<size_t>(row) >= steps.rows.size()) return {0, 0};
  for (const StepCell& c : steps.rows[row].ranks) {
    if (!c.present) continue;
    w0 = std::min(w0, c.start_ns);
    w1 = std::max(w1, c.start_ns + c.duration_ns);
  }
  return w1 > w0 ? std::make_pair(w0, w1)
                 : std::make_pair(int64_t{0}, int64_t{0});
}

std::vector<TrackUnits> CollectStepTracks(const TraceStore& store,
                                          const StepBreakdown& steps, int row,
                                          int64_t w0, int64_t w1) {
  std::vector<TrackUnits> out;
  size_t used = 0;
  CollectStepTracks(store, steps, row, w0, w1, &out, &used);
  out.resize(used);
  return out;
}

void CollectStepTracks(const TraceStore& store, const StepBreakdown& steps,
                       int row, int64_t w0, int64_t w1,
                       std::vector<TrackUnits>* tracks, size_t* used) {
  std::vector<TrackUnits>& out = *tracks;
  *used = 0;
  const StepRow& r = steps.rows[row];
  for (size_t k = 0; k < r.ranks.size() && k < steps.ranks.size(); ++k) {
    const StepCell& cell = r.ranks[k];
    const ProcessInfo& p = store.processes()[steps.ranks[k].process];
    for (TrackId track : p.tracks) {
      const TrackInfo& info = store.tracks()[track];
      const bool device = pod::IsDevice(info);
      if (!device && !pod::IsThread(info)) continue;
      uint32_t depth = 0;
      if (cell.present && cell.event.track == track) {
        depth = store.data(track).slices.depth(cell.event.index) + 1;
      }
      // The entries past `used` keep their units' storage for the next
      // row: a step's units are allocated once per walker, not per row.
      if (*used == out.size()) out.emplace_back();
      TrackUnits& t = out[*used];
      t.rank = k;
      t.track = track;
      t.device = device;
      CollectUnits(store, track, depth, w0, w1, &t.units);
      if (!t.units.empty()) ++*used;
    }
  }
}

}  // namespace podscope::viewer::cp
