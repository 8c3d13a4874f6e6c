// Records one worker for a capture: connects, asks who it is and measures
// its clock, names its file in the session folder, streams its trace into
// that file (asking it to stop when the capture is cancelled), measures the
// clock again and adds both measurements to the file. The outcome, with the
// error that names what went wrong, goes into a WorkerResult.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CAPTURE_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CAPTURE_H_

#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/profiler_service.pb.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler::internal {

// What the workers of one capture share: progress and the file names
// taken so far.
class CaptureShared {
 public:
  explicit CaptureShared(int workers) { progress_.workers = workers; }

  CaptureProgress progress() {
    std::lock_guard<std::mutex> lock(mutex_);
    return progress_;
  }
  // `<host>.<pid>`, or `<host>.<pid>-N` when another worker of this capture
  // already took it (two addresses of one process, a pid reused on
  // another host of the same name).
  std::string ReserveName(const std::string& host, int64_t pid);

  void Streaming(int delta);
  void Received(uint64_t bytes, uint64_t new_events);
  void Finished(bool ok);

 private:
  std::mutex mutex_;
  CaptureProgress progress_;
  std::vector<std::string> names_;
};

// The request a capture sends every worker.
proto::CaptureRequest BuildCaptureRequest(const CaptureOptions& options,
                                          const std::string& session);

// The file's clock record: every estimate as an offset to the capture
// client's clock.
trace_format::proto::ClockRecord ClockRecordOf(
    const std::vector<ClockEstimate>& estimates);

// Records the worker `result->address` into `dir`; fills `result`.
void CaptureWorker(const CaptureOptions& options, const std::string& dir,
                   const std::string& session, WorkerResult* result,
                   CaptureShared* shared);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CAPTURE_H_
