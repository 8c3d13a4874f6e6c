// What a session's file says about the process and the recording: the
// process facts that SetProcessInfo, SetSessionId and AddDevice record
// (kept across sessions), and the Metadata record built from them, the
// session's options and its clock.
#ifndef PODSCOPE_PROFILER_SRC_SESSION_METADATA_H_
#define PODSCOPE_PROFILER_SRC_SESSION_METADATA_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "podscope/base/net.h"
#include "podscope/base/time.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler::internal {

// Facts set by SetProcessInfo & co, kept across sessions.
struct ProcessFacts {
  std::mutex mutex;
  int process_index = -1;
  int process_count = 0;
  std::string session_id;
  std::vector<trace_format::proto::Device> devices;
  std::map<std::string, std::string> attributes;
  uint64_t generation = 0;  // bumped on every change
};
ProcessFacts& Facts();

// Bumped by every change of the facts: a session rewrites its metadata
// when it differs from the one it wrote.
uint64_t FactsGeneration();

using base::HostName;
using base::RealtimeNs;

// When and on which clock a recording started.
struct RecordingClock {
  ClockSkew skew;               // the session's clock against CLOCK_MONOTONIC
  TickCalibration calibration;  // ticks to CLOCK_MONOTONIC, as refined
  int64_t start_ns = 0;         // CLOCK_MONOTONIC
  int64_t start_realtime_ns = 0;
};

// The metadata of a recording with `options` on `clock`; the facts'
// generation it holds goes to `*facts_generation`.
trace_format::proto::Metadata RecordingMetadata(const TraceOptions& options,
                                                const RecordingClock& clock,
                                                uint64_t* facts_generation);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SESSION_METADATA_H_
