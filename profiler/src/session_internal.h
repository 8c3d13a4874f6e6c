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

namespace podscope::profiler::internal {

// Starts the process's session writing into `sink`. `owner` (non-zero)
// identifies the caller; `description` stands in for the file path in
// messages. FailedPrecondition if a session is already recording.
absl::Status StartOwnedSession(std::unique_ptr<trace_format::RecordSink> sink,
                               const TraceOptions& options,
                               const std::string& description, uint64_t owner);

// Stops the session if `owner` started it: the writer drains the last
// events and closes the file (index and trailer go to the sink).
absl::Status StopOwnedSession(uint64_t owner);

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
