#include "src/server/capture_request.h"

#include "absl/strings/str_cat.h"

namespace podscope::profiler::internal {

absl::Status ValidateCaptureRequest(const proto::CaptureRequest& r,
                                    const ServerOptions& options) {
  if (r.duration_ms() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_ms must be 0 (until stopped) or positive, not ",
                     r.duration_ms()));
  }
  if (r.duration_ms() > options.max_duration_ms) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration_ms ", r.duration_ms(), " exceeds this server's limit of ",
        options.max_duration_ms, " ms"));
  }
  if (r.level() < 0 || r.level() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("level must be 0..3, not ", r.level()));
  }
  if (r.sampling_hz() < 0 || r.sampling_hz() > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling_hz must be 0..10000, not ", r.sampling_hz()));
  }
  if (r.compression_level() < -1 || r.compression_level() > 9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression_level must be -1..9, not ", r.compression_level()));
  }
  if (!r.session_id().empty() && !IsValidSessionId(r.session_id())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "session id '", r.session_id(),
        "' is not valid (1 to 128 of letters, digits, '-', '_', '.', ':', "
        "'+')"));
  }
  return ValidateWindowAndFile(r, options);
}

absl::Status ValidateWindowAndFile(const proto::CaptureRequest& r,
                                   const ServerOptions& options) {
  if (r.worker_writes()) {
    if (options.capture_root.empty()) {
      return absl::FailedPreconditionError(
          "this profiler server has no capture root for worker-side "
          "captures (ServerOptions::capture_root or PODSCOPE_CAPTURE_ROOT)");
    }
    if (r.session_id().empty()) {
      return absl::InvalidArgumentError(
          "a worker-side capture needs a session id: the folder it writes "
          "into under the capture root");
    }
  }
  if (r.start_at_ns() != 0 && r.start_at_job_ns() != 0) {
    return absl::InvalidArgumentError(
        "start_at_ns and start_at_job_ns are two clocks for one start: set "
        "one");
  }
  const bool scheduled = r.start_at_ns() != 0 || r.start_at_job_ns() != 0;
  if (r.by_steps()) {
    if (scheduled) {
      return absl::InvalidArgumentError(
          "a window of steps starts with its first step, not at an instant: "
          "set by_steps or a start time, not both");
    }
    if (r.first_step() < 0 || r.last_step() < r.first_step() ||
        r.last_step() - r.first_step() >= kMaxStepsInWindow) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the steps must be first..last with 0 <= first <= last and fewer "
          "than ",
          kMaxStepsInWindow, " steps, not ", r.first_step(), "..",
          r.last_step()));
    }
  }
  if (r.clock_offsets_size() > kMaxClockOffsets) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxClockOffsets,
                                                   " clock offsets, not ",
                                                   r.clock_offsets_size()));
  }
  for (const auto& o : r.clock_offsets()) {
    if (o.reference().size() > 256 || o.uncertainty_ns() < 0) {
      return absl::InvalidArgumentError(
          "a clock offset's reference is at most 256 bytes and its "
          "uncertainty is not negative");
    }
  }
  return absl::OkStatus();
}

TraceOptions CaptureTraceOptions(const proto::CaptureRequest& r) {
  TraceOptions o;
  o.level = r.level() == 0 ? Level::kInfo : static_cast<Level>(r.level());
  o.sampling_hz = r.sampling_hz();
  if (r.compression_level() >= 0) o.compression_level = r.compression_level();
  return o;
}

}  // namespace podscope::profiler::internal
