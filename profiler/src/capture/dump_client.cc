// The client side of the DumpFlightRecorder call.
#include "podscope/base/status_macros.h"
#include "podscope/profiler/capture.h"
#include "src/capture/worker_connection.h"

namespace podscope::profiler {

absl::StatusOr<RemoteDump> RequestFlightRecorderDump(
    const std::string& address, const ConnectOptions& connect,
    const std::string& session, const std::string& reason) {
  PODSCOPE_ASSIGN_OR_RETURN(
      auto worker, internal::WorkerConnection::Connect(address, connect));
  grpc::ClientContext ctx;
  // Writing 64 MiB on a slow disk takes seconds, not minutes.
  worker->Prepare(&ctx, /*timeout_ms=*/60000);
  proto::DumpRequest request;
  request.set_session(session);
  request.set_reason(reason);
  proto::DumpResponse response;
  const grpc::Status s =
      worker->stub()->DumpFlightRecorder(&ctx, request, &response);
  if (!s.ok()) return worker->Error("DumpFlightRecorder", s);
  return RemoteDump{response.path(), response.events(), response.bytes()};
}

}  // namespace podscope::profiler
