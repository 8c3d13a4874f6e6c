// Offsets of this process's profiler clock to a reference clock (rank 0's,
// in a multi-process job), measured by whoever can (the job's heartbeats),
// and written into this process's own trace files as ClockOffset records,
// so that files written separately by each process line up when read
// together.
//
// Contract:
// - reference_ns = local_ns + offset_ns, known to +-uncertainty_ns, with
//   local_ns on the profiler clock (ProfilerNowNs()).
// - Every offset recorded while a StartTrace session runs goes into its
//   file (at its next flush); a session started later begins with the
//   latest one recorded before it. Sessions started by a remote capture
//   are not given them (the capture client measures its own).
// - Thread-safe; cheap enough to call every second.
#ifndef PODSCOPE_PROFILER_CLOCK_SYNC_H_
#define PODSCOPE_PROFILER_CLOCK_SYNC_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler {

struct ReferenceClockOffset {
  int64_t local_ns = 0;
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
  std::string reference;  // names the reference clock, e.g. "rank 0"
};

void RecordReferenceClockOffset(const ReferenceClockOffset& offset);

// The latest offset recorded, if any.
std::optional<ReferenceClockOffset> LatestReferenceClockOffset();

namespace internal {

// Where a session stands in the offsets; a new one starts with the latest.
inline constexpr uint64_t kClockCursorStart = ~uint64_t{0};

// Calls `write` for each offset recorded after `*cursor` (for
// kClockCursorStart: the latest only) and advances the cursor.
void DrainReferenceClockOffsets(
    uint64_t* cursor,
    const std::function<void(const trace_format::proto::ClockOffset&)>& write);

}  // namespace internal
}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_CLOCK_SYNC_H_
