// Checks a Capture request against the server's limits before anything
// starts: every field out of range is INVALID_ARGUMENT with a message
// naming the field, the value and the allowed range.
#ifndef PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_REQUEST_H_
#define PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_REQUEST_H_

#include "absl/status/status.h"
#include "podscope/profiler/profiler_service.pb.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/session.h"

namespace podscope::profiler::internal {

// OK when `r` may start or join a capture on a server with `options`.
absl::Status ValidateCaptureRequest(const proto::CaptureRequest& r,
                                    const ServerOptions& options);

inline constexpr int64_t kMaxStepsInWindow = 1'000'000;
inline constexpr int kMaxClockOffsets = 64;
// The worker-side file, scheduled start and window of steps of `r`.
absl::Status ValidateWindowAndFile(const proto::CaptureRequest& r,
                                   const ServerOptions& options);

// The session options a valid request asks for (its session id aside).
TraceOptions CaptureTraceOptions(const proto::CaptureRequest& r);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_REQUEST_H_
