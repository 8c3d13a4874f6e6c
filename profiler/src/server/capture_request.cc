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
