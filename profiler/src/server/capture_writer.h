// A Capture call served without a thread of its own: a gRPC callback
// reactor that sends a capture's stream to one client. It sends when the
// stream has more bytes or has finished (the stream tells it), and, for a
// worker-side capture, whose stream carries no bytes, the worker's
// progress about every second (a gRPC alarm). A server serving hundreds of
// captures at once (a host of many workers) then holds no thread per
// client, and creates none when they all start.
#ifndef PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_WRITER_H_
#define PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_WRITER_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "podscope/profiler/profiler_service.pb.h"
#include "src/server/capture_hub.h"

namespace podscope::profiler::internal {

// Starts sending `capture` to the caller; the reactor deletes itself when
// the call is done, and leaves the capture (CaptureHub::Leave) then.
grpc::ServerWriteReactor<pb::CaptureData>* StartCaptureWriter(
    CaptureHub* hub, std::shared_ptr<Capture> capture);

// A reactor that only ends the call with `status`.
grpc::ServerWriteReactor<pb::CaptureData>* RefuseCapture(grpc::Status status);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_WRITER_H_
