// Time statistics of the slices that share a name: one definition for the
// viewer's range statistics and `podscope summary`, so the two always
// report the same numbers.
//
// Contract: Add one slice at a time (its whole duration and its self time),
// Merge partial results in any order; the result does not depend on the
// order. min_ns and max_ns are 0 while count is 0.
#ifndef PODSCOPE_VIEWER_SLICE_TIME_STATS_H_
#define PODSCOPE_VIEWER_SLICE_TIME_STATS_H_

#include <algorithm>
#include <cstdint>

namespace podscope::viewer {

struct SliceTimeStats {
  uint64_t count = 0;
  // Sum of whole durations. A name nested in itself counts each level, as
  // in Perfetto's and Chrome's tables.
  int64_t total_ns = 0;
  // Sum of durations minus the time covered by each slice's direct
  // children on the same track.
  int64_t self_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;

  void Add(int64_t duration_ns, int64_t self_time_ns) {
    min_ns = count == 0 ? duration_ns : std::min(min_ns, duration_ns);
    max_ns = count == 0 ? duration_ns : std::max(max_ns, duration_ns);
    ++count;
    total_ns += duration_ns;
    self_ns += self_time_ns;
  }
  void Merge(const SliceTimeStats& other) {
    if (other.count == 0) return;
    min_ns = count == 0 ? other.min_ns : std::min(min_ns, other.min_ns);
    max_ns = count == 0 ? other.max_ns : std::max(max_ns, other.max_ns);
    count += other.count;
    total_ns += other.total_ns;
    self_ns += other.self_ns;
  }
  // Rounded to the nearest nanosecond; 0 without slices.
  int64_t mean_ns() const {
    if (count == 0) return 0;
    return static_cast<int64_t>(static_cast<long double>(total_ns) /
                                    static_cast<long double>(count) +
                                0.5L);
  }
};

// Longest total first: the order both tables are shown in (callers break
// ties by name).
inline bool LongerTotal(const SliceTimeStats& a, const SliceTimeStats& b) {
  return a.total_ns > b.total_ns;
}

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_SLICE_TIME_STATS_H_
