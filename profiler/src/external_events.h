// Events recorded through recorder.h: tracks that libraries own and the
// events they report, buffered under a lock until the writer thread takes
// them (these come per device operation, not per host scope).
#ifndef PODSCOPE_PROFILER_SRC_EXTERNAL_EVENTS_H_
#define PODSCOPE_PROFILER_SRC_EXTERNAL_EVENTS_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "podscope/profiler/recorder.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler::internal {

struct ExternalEvent {
  uint32_t track;  // index into tracks() + 1
  bool counter;
  int64_t start_ns;
  int64_t end_ns;
  uint32_t name;  // StringRegistry id
  uint64_t flow_in;
  double value;
  std::vector<PendingArg> args;  // from trace.h, as scopes store them
  bool instant = false;          // an instant at start_ns (not a counter)
};

class ExternalEvents {
 public:
  static ExternalEvents& Get();

  uint32_t AddTrack(const trace_format::proto::Track& track);
  void Add(ExternalEvent event);

  // Moves out the pending events and the tracks registered so far.
  void Take(std::vector<ExternalEvent>* events,
            std::vector<trace_format::proto::Track>* tracks);
  uint64_t dropped() const;
  // The tracks registered so far (handle h is element h - 1).
  std::vector<trace_format::proto::Track> Tracks() const;
  // Forgets pending events (a new session starts clean).
  void Clear();

  static constexpr size_t kMaxPending = 1 << 22;

 private:
  mutable std::mutex mutex_;
  std::vector<trace_format::proto::Track> tracks_;
  std::vector<ExternalEvent> pending_;
  uint64_t dropped_ = 0;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_EXTERNAL_EVENTS_H_
