// The reference-clock offsets a running session writes (clock_sync.h).

#include "podscope/profiler/clock_sync.h"

#include <deque>
#include <mutex>

namespace podscope::profiler {
namespace {

// The offsets not yet written by every session; the oldest go first when
// more than kKeep wait (a session flushes at least every second, far more
// often than offsets are recorded).
constexpr size_t kKeep = 256;

struct Offsets {
  std::mutex mu;
  std::deque<trace_format::proto::ClockOffset> recent;  // guarded by mu
  uint64_t next_seq = 0;  // sequence number of the next one recorded
  std::optional<ReferenceClockOffset> latest;
};

Offsets& Get() {
  static auto* offsets = new Offsets();
  return *offsets;
}

}  // namespace

void RecordReferenceClockOffset(const ReferenceClockOffset& offset) {
  trace_format::proto::ClockOffset o;
  o.set_local_monotonic_ns(offset.local_ns);
  o.set_offset_ns(offset.offset_ns);
  o.set_uncertainty_ns(offset.uncertainty_ns);
  o.set_reference(offset.reference);
  Offsets& s = Get();
  std::lock_guard<std::mutex> lock(s.mu);
  s.recent.push_back(std::move(o));
  if (s.recent.size() > kKeep) s.recent.pop_front();
  ++s.next_seq;
  s.latest = offset;
}

std::optional<ReferenceClockOffset> LatestReferenceClockOffset() {
  Offsets& s = Get();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.latest;
}

namespace internal {

void DrainReferenceClockOffsets(
    uint64_t* cursor,
    const std::function<void(const trace_format::proto::ClockOffset&)>& write) {
  std::deque<trace_format::proto::ClockOffset> out;
  {
    Offsets& s = Get();
    std::lock_guard<std::mutex> lock(s.mu);
    const uint64_t first = s.next_seq - s.recent.size();
    uint64_t from = *cursor;
    if (from == kClockCursorStart) from = s.next_seq == 0 ? 0 : s.next_seq - 1;
    if (from < first) from = first;
    for (uint64_t i = from; i < s.next_seq; ++i) {
      out.push_back(s.recent[i - first]);
    }
    *cursor = s.next_seq;
  }
  for (const auto& o : out) write(o);
}

}  // namespace internal
}  // namespace podscope::profiler
