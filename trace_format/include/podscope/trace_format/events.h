// The in-memory form of trace events, shared by the writer and the reader.
// Names, argument keys and string values are ids into the file's string
// table.
#ifndef PODSCOPE_TRACE_FORMAT_EVENTS_H_
#define PODSCOPE_TRACE_FORMAT_EVENTS_H_

#include <cstdint>
#include <limits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace podscope::trace_format {

// An interned string used as an argument value (distinct from an integer).
struct StringId {
  uint32_t id = 0;
  friend bool operator==(StringId, StringId) = default;
};

struct Arg {
  uint32_t key = 0;
  std::variant<int64_t, double, StringId> value;
  friend bool operator==(const Arg&, const Arg&) = default;
};

enum class EventKind : uint8_t { kSlice = 0, kInstant = 1 };
enum class FlowPhase : uint8_t { kBegin = 0, kStep = 1, kEnd = 2 };

// A complete event: a scope with a start and a duration.
struct Slice {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  uint32_t name = 0;
  // Nesting depth on its track; computed by readers (0 = outermost).
  uint32_t depth = 0;
  // Saturates at the ends of int64: a damaged file or a broken clock can
  // hold any times, and an overflowing sum would be undefined behaviour.
  int64_t end_ns() const {
    int64_t end;
    if (__builtin_add_overflow(start_ns, duration_ns, &end)) {
      return duration_ns > 0 ? std::numeric_limits<int64_t>::max()
                             : std::numeric_limits<int64_t>::min();
    }
    return end;
  }
  friend bool operator==(const Slice&, const Slice&) = default;
};

struct Instant {
  int64_t ts_ns = 0;
  uint32_t name = 0;
  friend bool operator==(const Instant&, const Instant&) = default;
};

struct CounterSample {
  int64_t ts_ns = 0;
  double value = 0;
  friend bool operator==(const CounterSample&, const CounterSample&) = default;
};

struct StackSample {
  int64_t ts_ns = 0;
  uint32_t stack = 0;
  friend bool operator==(const StackSample&, const StackSample&) = default;
};

// The arguments of one slice or instant, by its index in its column. Most
// events that have arguments have one, which is kept without allocating.
using ArgList = absl::InlinedVector<Arg, 1>;
struct EventArgs {
  EventKind kind = EventKind::kSlice;
  uint32_t index = 0;
  ArgList args;
  friend bool operator==(const EventArgs&, const EventArgs&) = default;
};

struct FlowLink {
  EventKind kind = EventKind::kSlice;
  uint32_t index = 0;
  uint64_t flow_id = 0;
  FlowPhase phase = FlowPhase::kBegin;
  friend bool operator==(const FlowLink&, const FlowLink&) = default;
};

// The events of one track. Readers return slices sorted by start ascending
// and end descending (parents before children), instants, counters and
// samples by time; `args` and `flows` are sorted by (kind, index).
struct TrackEvents {
  uint32_t track_id = 0;
  std::vector<Slice> slices;
  std::vector<Instant> instants;
  std::vector<CounterSample> counters;
  std::vector<StackSample> samples;
  std::vector<EventArgs> args;
  std::vector<FlowLink> flows;

  uint64_t event_count() const {
    return slices.size() + instants.size() + counters.size() + samples.size();
  }
  bool empty() const { return event_count() == 0; }
  // The first and last time the events cover (slices to their ends);
  // {INT64_MAX, INT64_MIN} when empty.
  std::pair<int64_t, int64_t> time_range() const;
  // The arguments of an event, or nullptr.
  const EventArgs* FindArgs(EventKind kind, uint32_t index) const;
};

// Orders slices as readers return them: start ascending, end descending.
inline bool SliceOrder(const Slice& a, const Slice& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  return a.end_ns() > b.end_ns();
}

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_EVENTS_H_
