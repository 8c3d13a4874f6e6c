// The file of a worker-side capture: <root>/<session>/<host>.<pid>.podtrace
// under the capture root the server was configured with. The session
// folder is made if missing (many workers make it at once; one that
// appears between a check and a mkdir is fine), the file is created
// exclusively (a suffix when the name is taken; never a link followed or a
// file replaced), and its sink counts the bytes and their crc32 as the
// session writes them.
#ifndef PODSCOPE_PROFILER_SRC_SERVER_WORKER_FILE_H_
#define PODSCOPE_PROFILER_SRC_SERVER_WORKER_FILE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::profiler::internal {

// What the sink has written; shared with whoever reports progress.
struct WorkerFileState {
  std::atomic<uint64_t> bytes{0};
  std::mutex mutex;
  uint32_t crc32 = 0;  // guarded by mutex
};

struct WorkerFile {
  std::unique_ptr<trace_format::RecordSink> sink;
  std::shared_ptr<WorkerFileState> state;
  std::string relative_path;  // <session>/<file>
  std::string dir;            // the session folder
};

// `session` must already be a valid session id (one safe folder name).
absl::StatusOr<WorkerFile> CreateWorkerFile(const std::string& root,
                                            const std::string& session,
                                            const std::string& stem);

// Makes the file's name durable once the file is closed (once per
// capture, not at its start, when every worker of a pod makes its file
// in the same folder at once).
void SyncWorkerFolder(const std::string& dir);

// Removes a file CreateWorkerFile made (`relative_path` as it said) whose
// session never started.
void RemoveWorkerFile(const std::string& root,
                      const std::string& relative_path);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_WORKER_FILE_H_
