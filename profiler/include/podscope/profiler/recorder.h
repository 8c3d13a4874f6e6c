// The recording interface for libraries that produce events off the host
// threads' hot path with their own tracks and timestamps: a runtime's
// device streams, transfers, collectives. Timestamps are CLOCK_MONOTONIC
// nanoseconds (NowNs()).
#ifndef PODSCOPE_PROFILER_RECORDER_H_
#define PODSCOPE_PROFILER_RECORDER_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <variant>

#include "podscope/profiler/trace.h"

namespace podscope::profiler {

// A track registered by a library; valid for the life of the process and
// present in every session that records events on it.
struct TrackHandle {
  uint32_t id = 0;
  bool valid() const { return id != 0; }
};

TrackHandle RegisterDeviceStreamTrack(int device_id, int stream_id,
                                      std::string_view name);
TrackHandle RegisterCounterTrack(std::string_view name, std::string_view unit);

// The profiler's clock in monotonic nanoseconds (the timeline's time base).
int64_t NowNs();

// True when a session records events at `level`.
inline bool IsRecording(Level level = Level::kInfo) {
  return internal::Enabled(level);
}

struct EventArg {
  std::string_view key;
  std::variant<int64_t, double, std::string_view> value;
};

// A complete event on `track`. `flow_in` (non-zero) makes it the end of a
// flow that a host scope started with Trace::FlowOut.
void RecordSlice(TrackHandle track, int64_t start_ns, int64_t end_ns,
                 std::string_view name, uint64_t flow_in = 0,
                 std::initializer_list<EventArg> args = {});
void RecordCounterValue(TrackHandle track, int64_t ts_ns, double value);
// An instant (zero-duration marker) on `track`, e.g. an allocation.
void RecordInstant(TrackHandle track, int64_t ts_ns, std::string_view name,
                   std::initializer_list<EventArg> args = {});

// A fresh process-unique flow id.
uint64_t NewFlowId();

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_RECORDER_H_
