// The status a Podscope gRPC service (the profiler server, XProf's
// ProfilerService on the same port, a job's coordinator) answers with for
// an absl::Status: the same code (the two enumerations share their
// values) and message.
#ifndef PODSCOPE_PROFILER_GRPC_STATUS_H_
#define PODSCOPE_PROFILER_GRPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"

namespace podscope::profiler {

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()),
                      std::string(s.message()));
}

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_GRPC_STATUS_H_
