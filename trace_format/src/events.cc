#include "podscope/trace_format/events.h"

#include <algorithm>
#include <limits>

namespace podscope::trace_format {

const EventArgs* TrackEvents::FindArgs(EventKind kind, uint32_t index) const {
  auto it = std::lower_bound(
      args.begin(), args.end(), std::make_pair(kind, index),
      [](const EventArgs& a, const std::pair<EventKind, uint32_t>& key) {
        return std::make_pair(a.kind, a.index) < key;
      });
  if (it == args.end() || it->kind != kind || it->index != index) {
    return nullptr;
  }
  return &*it;
}

std::pair<int64_t, int64_t> TrackEvents::time_range() const {
  int64_t lo = std::numeric_limits<int64_t>::max();
  int64_t hi = std::numeric_limits<int64_t>::min();
  auto cover = [&](int64_t a, int64_t b) {
    lo = std::min(lo, a);
    hi = std::max(hi, b);
  };
  for (const Slice& s : slices) cover(s.start_ns, s.end_ns());
  for (const Instant& e : instants) cover(e.ts_ns, e.ts_ns);
  for (const CounterSample& c : counters) cover(c.ts_ns, c.ts_ns);
  for (const StackSample& s : samples) cover(s.ts_ns, s.ts_ns);
  return {lo, hi};
}

}  // namespace podscope::trace_format
