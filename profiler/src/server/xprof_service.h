// The `tensorflow.ProfilerService` protocol (Profile, Terminate) that
// XProf's and TensorBoard's capture buttons send, answered from the same
// capture machinery as Podscope's own service: a Profile joins or starts a
// capture on the CaptureHub, converts what was recorded to an XSpace, and
// answers with it (emit_xspace) or writes it as
// <repository>/<session>/<host>.xplane.pb inside the repository root the
// process configured, never outside it.
#ifndef PODSCOPE_PROFILER_SRC_SERVER_XPROF_SERVICE_H_
#define PODSCOPE_PROFILER_SRC_SERVER_XPROF_SERVICE_H_

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/xprof_service.grpc.pb.h"
#include "src/server/capture_hub.h"

namespace podscope::profiler::internal {

// The service, sharing `hub` (which must outlive it) with the native one.
// `token` as the server resolved it (empty: none required).
std::unique_ptr<tensorflow::ProfilerService::Service> MakeXprofService(
    const ServerOptions& options, std::string token, CaptureHub* hub);

// The folder a request's repository_root names, inside `configured_root`:
// a relative path is taken under the root; an absolute one must lie inside
// it; `..` components, and symlinks that lead out, are refused
// (PERMISSION_DENIED). With no root configured every write is refused
// (FAILED_PRECONDITION).
absl::StatusOr<std::filesystem::path> ResolveRepository(
    const std::string& configured_root, const std::string& requested);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_XPROF_SERVICE_H_
