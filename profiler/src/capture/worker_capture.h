// Records one worker for a capture: connects, asks who it is and measures
// its clock, names its file in the session folder, streams its trace into
// that file (asking it to stop when the capture is cancelled), measures the
// clock again and adds both measurements to the file. The outcome, with the
// error that names what went wrong, goes into a WorkerResult.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CAPTURE_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CAPTURE_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/profiler_service.pb.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler::internal {

// What the workers of one capture share: the session folder and progress.
class CaptureShared {
 public:
  // `dir_fd` is the session folder `dir`, opened; it outlives this.
  CaptureShared(int workers, std::string dir, int dir_fd)
      : dir_(std::move(dir)), dir_fd_(dir_fd) {
    progress_.workers = workers;
  }

  CaptureProgress progress() {
    std::lock_guard<std::mutex> lock(mutex_);
    return progress_;
  }

  // Creates the worker's file in the session folder, named
  // `<host>.<pid>.podtrace` with the host made a safe file-name component
  // (base::SafeFileComponent: the worker says what its host is called), or
  // `<host>.<pid>.<N>.podtrace` when the name is taken (two addresses of
  // one process, a pid reused on another host of the same name, a file
  // left by an earlier capture, a link planted there). Never follows a
  // link nor replaces a file. Sets `*path`; the descriptor is the
  // caller's.
  absl::StatusOr<int> CreateFile(const std::string& host, int64_t pid,
                                 std::string* path);
  // The same for `<stem>.podtrace` (`stem` a safe file-name component).
  absl::StatusOr<int> CreateFileWithStem(const std::string& stem,
                                         std::string* path);

  void Streaming(int delta);
  // Replaces the counts (a relay reports its own), keeping `workers`.
  void Set(const CaptureProgress& p);
  void Received(uint64_t bytes, uint64_t new_events);
  void Finished(bool ok);

 private:
  const std::string dir_;
  const int dir_fd_;
  std::mutex mutex_;
  CaptureProgress progress_;
};

// The file a worker named for a worker-side capture; it must be
// `<session>/<one safe name>.podtrace` (a worker cannot make this side look
// anywhere else). The name alone.
absl::StatusOr<std::string> CheckedWorkerFileName(const std::string& session,
                                                  const std::string& path);

// A worker-side file at `path`, where this side shares the worker's
// folder: absent is no error (`*seen` false); present, it must hold the
// `bytes` the worker wrote (else an error naming the path and both sizes).
absl::Status LookForWorkerFile(const std::string& path, uint64_t bytes,
                               bool* seen);

// Where the workers of a capture meet once each has been reached (or has
// failed), so that the XProf ones start recording together: the last to
// arrive sets the common start, `lead_ms` after it, on the realtime clock.
class StartGate {
 public:
  StartGate(int workers, int64_t lead_ms)
      : remaining_(workers), lead_ms_(lead_ms) {}
  // Each worker calls this once.
  void Arrive();
  // Whether every worker has arrived, and then the common start.
  bool Ready(int64_t* start_realtime_ns);

 private:
  std::mutex mutex_;
  int remaining_;
  const int64_t lead_ms_;
  int64_t start_realtime_ns_ = 0;
};

struct XProfHost;

// The request a capture sends every worker.
proto::CaptureRequest BuildCaptureRequest(const CaptureOptions& options,
                                          const std::string& session);

// The file's clock record: every estimate as an offset to the capture
// client's clock.
trace_format::proto::ClockRecord ClockRecordOf(
    const std::vector<ClockEstimate>& estimates);

// Whether the capture was cancelled (CaptureOptions::cancel).
bool Cancelled(const CaptureOptions& options);

// Worker-side captures of every worker (CaptureOptions::worker_writes),
// driven from the calling thread through one completion queue: no thread
// per worker. Fills `results` (their addresses and ranks set).
void CaptureWorkersWriting(const CaptureOptions& options,
                           const std::string& session, CaptureShared* shared,
                           std::vector<WorkerResult>* results);

// Records every worker (`results`, their addresses and ranks set) into
// the session folder, streamed, with a fixed number of threads whatever
// their number: one opens the channels and sends GetInfo; the calling
// thread takes every answer, starts each worker's stream into its file,
// writes every message it receives there, and relays a cancel as Stop; a
// pool of 8 takes each worker's clock before (once it records) and after,
// and ends its file; one thread probes the recording workers' clocks every
// 100 ms. A complete file is on disk (fdatasync) before it counts as ok. A
// worker that speaks XProf's protocol instead is sent its Profile call on
// the same queue once every worker has been reached (they start together),
// and its answer is parsed into its `xprof` entry on the pool (its file is
// written once every host is aligned, WriteXProfHost).
void CaptureWorkersStreaming(const CaptureOptions& options,
                             const std::string& session, CaptureShared* shared,
                             StartGate* gate,
                             std::vector<WorkerResult>* results,
                             std::vector<XProfHost>* xprof);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_WORKER_CAPTURE_H_
