#include "hit_test.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "podscope/viewer/lod.h"

namespace podscope::viewer::app {

using trace_format::EventKind;

std::optional<EventRef> HitSlice(const TraceStore& store, TrackId track,
                                 uint32_t depth, int64_t t0, int64_t t1,
                                 uint32_t pixels, double x, int tolerance_px) {
  if (track >= store.tracks().size() || t1 <= t0 || pixels == 0) {
    return std::nullopt;
  }
  const SliceColumns& s = store.data(track).slices;
  if (depth >= s.depth_count() || x < -tolerance_px ||
      x >= static_cast<double>(pixels) + tolerance_px) {
    return std::nullopt;
  }
  const PixelGrid grid(t0, t1, pixels);
  const int64_t p = static_cast<int64_t>(std::floor(x));
  const uint32_t lo = s.depth_begin(depth), hi = s.depth_end(depth);
  for (int r = 0; r <= tolerance_px; ++r) {
    const int64_t first = std::max<int64_t>(p - r, 0);
    const int64_t last = std::min<int64_t>(p + r + 1, pixels);
    if (first >= last) continue;
    const int64_t from = grid.Bound(static_cast<uint32_t>(first));
    const int64_t to = grid.Bound(static_cast<uint32_t>(last));
    const uint32_t a = s.FirstEndingAfter(lo, hi, from);
    const uint32_t b = s.FirstStartingAtOrAfter(a, hi, to);
    if (a < b) {
      return EventRef{track, EventKind::kSlice, s.Longest(a, b)};
    }
  }
  return std::nullopt;
}

std::optional<EventRef> HitInstant(const TraceStore& store, TrackId track,
                                   int64_t t0, int64_t t1, uint32_t pixels,
                                   double x, int tolerance_px) {
  if (track >= store.tracks().size() || t1 <= t0 || pixels == 0) {
    return std::nullopt;
  }
  const auto& ts = store.data(track).instants.ts;
  const double ns_per_px = static_cast<double>(t1 - t0) / pixels;
  const double at = static_cast<double>(t0) + x * ns_per_px;
  const double reach = (tolerance_px + 0.5) * ns_per_px;
  const int64_t from = static_cast<int64_t>(std::floor(at - reach));
  const int64_t to = static_cast<int64_t>(std::ceil(at + reach));
  auto it = std::lower_bound(ts.begin(), ts.end(), from);
  std::optional<EventRef> best;
  double best_distance = 0;
  for (; it != ts.end() && *it <= to; ++it) {
    const double d = std::fabs(static_cast<double>(*it) - at);
    if (!best || d < best_distance) {
      best = EventRef{track, EventKind::kInstant,
                      static_cast<uint32_t>(it - ts.begin())};
      best_distance = d;
    }
  }
  return best;
}

uint32_t DepthOf(const TraceStore& store, const EventRef& event) {
  if (event.kind != EventKind::kSlice) return 0;
  return store.data(event.track).slices.depth(event.index);
}

std::vector<EventRef> EnclosingSlices(const TraceStore& store,
                                      const EventRef& event) {
  std::vector<EventRef> out;
  if (event.track >= store.tracks().size()) return out;
  const SliceColumns& s = store.data(event.track).slices;
  if (s.relaid()) return out;
  int64_t start, end;
  uint32_t depth;
  if (event.kind == EventKind::kSlice) {
    if (event.index >= s.size()) return out;
    start = s.start(event.index);
    end = s.end(event.index);
    depth = s.depth(event.index);
  } else {
    start = store.StartOf(event);
    end = start;
    depth = s.depth_count();
  }
  for (uint32_t d = depth; d-- > 0;) {
    const uint32_t lo = s.depth_begin(d), hi = s.depth_end(d);
    const int64_t after = start == INT64_MAX ? start : start + 1;
    const uint32_t j = s.FirstStartingAtOrAfter(lo, hi, after);
    if (j == lo) continue;
    const uint32_t parent = j - 1;
    if (s.start(parent) <= start && s.covered_end(parent) >= end &&
        (event.kind == EventKind::kSlice || s.covered_end(parent) > start)) {
      out.push_back({event.track, EventKind::kSlice, parent});
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string TrackPath(const TraceStore& store, TrackId track) {
  if (track >= store.tracks().size()) return "";
  const TrackInfo& t = store.tracks()[track];
  const ProcessInfo& p = store.processes()[t.process];
  std::string process = absl::StrCat("pid ", p.pid);
  if (p.process_index >= 0) {
    absl::StrAppend(&process, " (process ", p.process_index, ")");
  }
  return absl::StrCat(p.host_name, " › ", process, " › ", t.name);
}

std::string_view ScopeOfName(std::string_view name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return {};
  return name.substr(0, slash);
}

}  // namespace podscope::viewer::app
