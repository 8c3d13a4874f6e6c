// Step windows for `podscope summary`, read one track at a time.
//
// A step is an outermost slice whose name contains "step" on a thread
// track. On an asynchronous runtime the host scope ends when the step has
// been dispatched, so a step's window runs from its start (no earlier than
// the previous window's end on that track) to the end of the device work
// its launches reached: the device executions that the flows leaving
// slices inside the step end at, each running until the next execution on
// its stream starts. These are the windows the pod analyses use
// (viewer/core analysis_util.cc), computed here without loading the trace.
//
// Feed every track of one file with AddTrack (in any order), then take
// Durations(). Memory is one entry per step and per device execution.
#ifndef PODSCOPE_TOOLS_SUMMARY_STEPS_H_
#define PODSCOPE_TOOLS_SUMMARY_STEPS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/reader.h"

namespace podscope::tools {

class StepWindows {
 public:
  // A thread track contributes its steps and the flows leaving them; a
  // device stream the executions its flows arrive at. Other kinds add
  // nothing.
  void AddTrack(const trace_format::TraceReader& reader,
                trace_format::proto::TrackKind kind,
                const trace_format::TrackEvents& e);

  // Each step's window length, in step order per track.
  std::vector<int64_t> Durations() const;

 private:
  struct Step {
    int64_t start = 0;
    int64_t end = 0;
    std::vector<uint64_t> launches;  // ids of flows leaving the step
  };
  void AddThread(const trace_format::TraceReader& reader,
                 const trace_format::TrackEvents& e);
  void AddDeviceStream(const trace_format::TrackEvents& e);

  std::vector<std::vector<Step>> steps_by_track_;
  // Flow id -> end of the device execution the flow arrives at.
  absl::flat_hash_map<uint64_t, int64_t> execution_end_;
};

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_SUMMARY_STEPS_H_
