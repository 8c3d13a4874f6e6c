// Sessions started by the profiler server rather than by StartTrace: they
// write into any record sink (the capture's stream) and only their owner
// may stop them.
#ifndef PODSCOPE_PROFILER_SRC_SESSION_INTERNAL_H_
#define PODSCOPE_PROFILER_SRC_SESSION_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"
#include "src/capture_window.h"

namespace podscope::profiler::internal {

// What a capture asks of its session beyond TraceOptions.
struct CaptureExtras {
  // Only the events inside it go to the file (null: all).
  std::shared_ptr<CaptureWindow> window;
  // The file's clock offsets from the start (a capture client's probes).
  std::vector<trace_format::proto::ClockOffset> clock_offsets;
  // The offsets the process's job measures go into the file as they come,
  // as for StartTrace (the file is written where the worker runs, with no
  // client to measure its clock).
  bool job_clock_offsets = false;
};

// Starts the process's session writing into `sink`. `owner` (non-zero)
// identifies the caller; `description` stands in for the file path in
// messages. FailedPrecondition if a session is already recording.
absl::Status StartOwnedSession(std::unique_ptr<trace_format::RecordSink> sink,
                               const TraceOptions& options,
                               const std::string& description, uint64_t owner,
                               const CaptureExtras& extras = {});

// Records the capture `owner` into `sink` by sharing the trace this
// process records itself (StartTrace): the sink gets a file of its own,
// holding what the process records from now until StopOwnedSession(owner)
// or the trace's end, at `options`' level (the trace records at least at
// that level meanwhile) and sampling. `*session_id` is the running trace's
// session id when it has one, else options.session_id.
// FailedPrecondition when no such trace runs.
absl::Status ShareLocalSession(std::unique_ptr<trace_format::RecordSink> sink,
                               const TraceOptions& options, uint64_t owner,
                               std::string* session_id,
                               const CaptureExtras& extras = {});

// Stops the session or the shared recording `owner` started: the last
// events are drained and the file is closed (index and trailer go to the
// sink). When the shared trace ended first, how its capture ended.
absl::Status StopOwnedSession(uint64_t owner);

// Whether the session or shared recording of `owner` still records.
bool OwnedSessionRunning(uint64_t owner);

// The running session's id (empty if none or unnamed); `*active` tells
// whether any session runs.
std::string ActiveSessionId(bool* active);

std::string HostNameForFiles();

// A session id from the UTC time: YYYYMMDD-HHMMSS, with ".mmm" appended
// when `with_millis`.
std::string UtcSessionId(bool with_millis);

// The facts SetProcessInfo, AddDevice & co recorded.
struct ProcessFactsSnapshot {
  int process_index = -1;
  int process_count = 0;
  std::string session_id;
  std::vector<trace_format::proto::Device> devices;
};
ProcessFactsSnapshot SnapshotProcessFacts();

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SESSION_INTERNAL_H_
