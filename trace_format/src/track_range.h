// Widening an index's time range by events, shared by the writer's index
// and the one a StreamedFile builds from the records it received.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_TRACK_RANGE_H_
#define PODSCOPE_TRACE_FORMAT_SRC_TRACK_RANGE_H_

#include <algorithm>
#include <cstdint>

#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

// Adds `count` events spanning [min_ns, max_ns] to `range`.
inline void WidenTrackRange(proto::TrackRange* range, int64_t min_ns,
                            int64_t max_ns, uint64_t count) {
  if (range->event_count() == 0) {
    range->set_min_ns(min_ns);
    range->set_max_ns(max_ns);
  } else {
    range->set_min_ns(std::min(range->min_ns(), min_ns));
    range->set_max_ns(std::max(range->max_ns(), max_ns));
  }
  range->set_event_count(range->event_count() + count);
}

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_TRACK_RANGE_H_
