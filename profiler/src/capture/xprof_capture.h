// Records a worker that speaks XProf's `tensorflow.ProfilerService` (JAX,
// TensorFlow, PyTorch/XLA) for a capture: one Profile call asking for the
// XSpace in the answer, starting at the capture's common start time; what
// the host's clock can be aligned by (the call's times, its collectives);
// then, once every host is aligned, the host's `.podtrace` (and with
// CaptureOptions::also_xplane its `.xplane.pb`).
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_XPROF_CAPTURE_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_XPROF_CAPTURE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/xprof_service.pb.h"
#include "podscope/trace_format/xplane.pb.h"
#include "src/capture/host_alignment.h"
#include "src/capture/worker_capture.h"
#include "src/capture/worker_connection.h"

namespace podscope::profiler::internal {

// One XProf host between its Profile call and its file.
struct XProfHost {
  bool captured = false;
  tensorflow::profiler::XSpace space;
  AlignInput align;
  uint64_t events = 0;
};

// The Profile request a capture sends.
tensorflow::ProfileRequest BuildProfileRequest(const CaptureOptions& options,
                                               const std::string& session,
                                               const std::string& host_name,
                                               int64_t start_realtime_ns);

// What an XSpace offers for alignment: the span of its events (host
// clock) and its collectives' ends keyed by step, op name and occurrence.
// `sent_ns`/`received_ns`: the Profile call on the client's monotonic clock.
AlignInput AlignInputOf(const tensorflow::profiler::XSpace& space,
                        int64_t sent_ns, int64_t received_ns,
                        int64_t wallclock_offset_ns, uint64_t* events);

// The Profile request for the XProf worker `worker`, starting at
// `start_realtime_ns` (ProfileOptions.start_timestamp_ns); fills what
// `result` says of the request. The worker's token is dropped: XProf
// servers check none (a note says so when one was given).
tensorflow::ProfileRequest StartXProfProfile(const CaptureOptions& options,
                                             const std::string& session,
                                             int64_t start_realtime_ns,
                                             WorkerConnection& worker,
                                             WorkerResult* result);

// What is said of a Profile answer that does not parse.
absl::Status NotAProfileResponse(const WorkerConnection& worker);

// The Profile call's deadline: until the start, the capture, and a minute.
int64_t XProfCallTimeoutMs(const CaptureOptions& options,
                           int64_t start_realtime_ns);

// What the Profile call answered (`s`, `response`; sent and answered at
// `sent_ns`/`received_ns` on the client's monotonic clock) into `host` and
// `result` but for the file. An error names the worker and what to do. A
// cancelled capture sends Terminate; the answer then holds what was
// recorded until then.
absl::Status FinishXProfProfile(const CaptureOptions& options,
                                const WorkerConnection& worker,
                                const grpc::Status& s,
                                tensorflow::ProfileResponse* response,
                                int64_t sent_ns, int64_t received_ns,
                                CaptureShared* shared, WorkerResult* result,
                                XProfHost* host);

// Writes the host's files with its alignment; completes `result`.
absl::Status WriteXProfHost(const CaptureOptions& options,
                            const std::string& session,
                            const HostAlignment& alignment,
                            CaptureShared* shared, XProfHost* host,
                            WorkerResult* result);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_XPROF_CAPTURE_H_
