#include "src/server/xprof_service.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/profiler/bearer_token.h"
#include "podscope/profiler/grpc_status.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/xspace.h"

namespace podscope::profiler::internal {
namespace {

namespace fs = std::filesystem;
namespace tf = ::tensorflow;
using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

// `path` is `root` or below it, component by component.
bool Inside(const fs::path& root, const fs::path& path) {
  auto r = root.begin();
  auto p = path.begin();
  for (; r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // a trailing separator
    if (p == path.end() || *r != *p) return false;
  }
  return true;
}

// A name from the request or the trace as one path component, through
// the one sanitiser every such name takes; `fallback` when there is none.
std::string ComponentName(const std::string& name, std::string fallback) {
  return name.empty() ? fallback : base::SafeFileComponent(name);
}

absl::Status WriteNoFollow(const fs::path& path, const std::string& data) {
  const int fd =
      ::open(path.c_str(),
             O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(path.string(), ": cannot write: ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return absl::DataLossError(
          absl::StrCat(path.string(), ": write failed: ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return absl::DataLossError(absl::StrCat(path.string(), ": write failed"));
  }
  return absl::OkStatus();
}

class XprofService final : public tf::ProfilerService::Service {
 public:
  XprofService(const ServerOptions& options, std::string token, CaptureHub* hub)
      : options_(options),
        token_(std::move(token)),
        hub_(hub),
        budget_(options.max_capture_bytes, "max_capture_bytes") {
    root_ = options.xprof_repository_root;
    if (root_.empty()) {
      if (const char* env = std::getenv("PODSCOPE_XPROF_REPOSITORY_ROOT")) {
        root_ = env;
      }
    }
  }

  Status Profile(ServerContext* ctx, const tf::ProfileRequest* request,
                 tf::ProfileResponse* response) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    ProfileSettings settings;
    if (Status s = Settle(*request, &settings); !s.ok()) return s;
    // Held until the answer is sent: the trace, then what is made of it.
    ByteBudget::Holding holding(&budget_);
    std::string trace, session;
    if (Status s = Record(ctx, settings, &holding, &trace, &session); !s.ok()) {
      return s;
    }
    return Answer(*request, settings, std::move(trace), session, response);
  }

  Status Terminate(ServerContext* ctx, const tf::TerminateRequest* request,
                   tf::TerminateResponse*) override {
    if (Status s = Authorize(ctx); !s.ok()) return s;
    // Ends whichever capture runs: XProf's session ids are not the
    // capture's own. Nothing running is not an error.
    auto stopped = hub_->Stop("");
    if (!stopped.ok() &&
        stopped.status().code() != absl::StatusCode::kNotFound) {
      return ToGrpcStatus(stopped.status());
    }
    (void)request;
    return Status::OK;
  }

 private:
  // What a Profile request asks for, checked before anything is recorded.
  struct ProfileSettings {
    uint32_t host_level = 2;
    uint32_t device_level = 1;
    uint64_t duration_ms = 0;
    fs::path repo_dir;  // empty: the answer carries the profile
  };

  Status Settle(const tf::ProfileRequest& request,
                ProfileSettings* settings) const {
    // ProfileOptions of version 0 predate the levels: their defaults apply.
    const tf::ProfileOptions& opts = request.opts();
    settings->host_level = opts.version() == 0 ? 2 : opts.host_tracer_level();
    settings->device_level =
        opts.version() == 0 ? 1 : opts.device_tracer_level();
    if (settings->host_level > 3) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("host_tracer_level must be 0..3, not ",
                                 settings->host_level));
    }
    settings->duration_ms =
        opts.duration_ms() != 0 ? opts.duration_ms() : request.duration_ms();
    if (settings->duration_ms >
        static_cast<uint64_t>(options_.max_duration_ms)) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    absl::StrCat("duration_ms ", settings->duration_ms,
                                 " exceeds this server's limit of ",
                                 options_.max_duration_ms, " ms"));
    }
    // Where the answer goes is settled before recording anything.
    std::string repository = request.repository_root();
    if (repository.empty()) repository = opts.repository_path();
    if (!request.emit_xspace() && !repository.empty()) {
      auto dir = ResolveRepository(root_, repository);
      if (!dir.ok()) return ToGrpcStatus(dir.status());
      settings->repo_dir = *dir;
    }
    return Status::OK;
  }

  // Joins (or starts) a capture and collects its bytes, each counted
  // against the budget all XProf answers share.
  Status Record(ServerContext* ctx, const ProfileSettings& settings,
                ByteBudget::Holding* holding, std::string* trace,
                std::string* session) {
    pb::CaptureRequest capture_request;
    capture_request.set_duration_ms(static_cast<int64_t>(settings.duration_ms));
    // The host level is the capture's level (XProf's 1..3 are ours); with
    // host tracing off, the capture records at the default level so that
    // device events (recorded at info level) are kept, and the host plane
    // is left out of the answer.
    capture_request.set_level(settings.host_level == 0
                                  ? 2
                                  : static_cast<int32_t>(settings.host_level));
    capture_request.set_client(
        absl::StrCat("XProf ProfilerService at ", ctx->peer()));
    capture_request.set_join_any_session(true);
    auto joined = hub_->Join(capture_request, ctx->peer());
    if (!joined.ok()) return ToGrpcStatus(joined.status());
    std::shared_ptr<Capture> capture = *joined;
    std::string bytes;
    size_t cursor = 0;
    absl::Status end;
    absl::Status refused;
    bool cancelled = false;
    while (true) {
      if (ctx->IsCancelled()) {
        cancelled = true;
        break;
      }
      pb::CaptureData progress;
      const bool done = capture->stream->Next(&cursor, &bytes, size_t{1} << 24,
                                              std::chrono::milliseconds(250),
                                              &progress, &end);
      refused = holding->Take(static_cast<int64_t>(bytes.size()));
      if (!refused.ok()) break;
      *trace += bytes;
      if (done) break;
    }
    *session = capture->session_id;
    hub_->Leave(capture);
    if (cancelled) return Status(StatusCode::CANCELLED, "the client went away");
    if (!refused.ok()) {
      return Status(StatusCode::RESOURCE_EXHAUSTED,
                    absl::StrCat("XProf Profile: ", refused.message()));
    }
    return end.ok() ? Status::OK : ToGrpcStatus(end);
  }

  // The trace as XSpace: in the answer, or written to the repository.
  Status Answer(const tf::ProfileRequest& request,
                const ProfileSettings& settings, std::string trace,
                const std::string& session, tf::ProfileResponse* response) {
    auto reader = trace_format::TraceReader::OpenBuffer(std::move(trace),
                                                        "capture " + session);
    if (!reader.ok()) return ToGrpcStatus(reader.status());
    trace_format::XSpaceExportOptions export_options;
    export_options.host_tracer_level = static_cast<int>(settings.host_level);
    export_options.device_tracer_level =
        static_cast<int>(settings.device_level);
    export_options.max_events = request.max_events();
    auto space = trace_format::ToXSpace(**reader, export_options);
    if (!space.ok()) return ToGrpcStatus(space.status());
    if (request.opts().python_tracer_level() > 0) {
      space->add_warnings(
          "python_tracer_level: this process has no Python tracer");
    }
    bool empty = true;
    for (const auto& plane : space->planes()) {
      for (const auto& line : plane.lines()) empty &= line.events().empty();
    }
    response->set_empty_trace(empty);
    const std::string host =
        ComponentName(request.host_name().empty() ? (*reader)->metadata().host()
                                                  : request.host_name(),
                      "host");
    if (request.emit_xspace()) {
      *response->mutable_xspace() = std::move(*space);
      return Status::OK;
    }
    const std::string file = host + ".xplane.pb";
    if (settings.repo_dir.empty()) {
      tf::ProfileToolData* data = response->add_tool_data();
      data->set_name(file);
      data->set_data(space->SerializeAsString());
      return Status::OK;
    }
    const fs::path dir =
        settings.repo_dir /
        ComponentName(request.session_id(), ComponentName(session, "capture"));
    std::string failed_part;
    if (std::error_code ec =
            base::MakeDirectories(dir.string(), &failed_part)) {
      return Status(
          StatusCode::PERMISSION_DENIED,
          absl::StrCat(failed_part, ": cannot create: ", ec.message()));
    }
    // Checked again now that it exists: a symlink swapped in meanwhile must
    // not lead out of the root.
    auto again = ResolveRepository(root_, dir.string());
    if (!again.ok()) return ToGrpcStatus(again.status());
    if (absl::Status s =
            WriteNoFollow(*again / file, space->SerializeAsString());
        !s.ok()) {
      return ToGrpcStatus(s);
    }
    return Status::OK;
  }

  // The native service's rule: `authorization: Bearer <token>` when the
  // server has a token.
  Status Authorize(ServerContext* ctx) const {
    return CheckBearerToken(*ctx, token_,
                            "this profiler server requires a token "
                            "(authorization: Bearer <token>)",
                            "wrong profiler token");
  }

  const ServerOptions options_;
  const std::string token_;
  CaptureHub* const hub_;
  // The copies of captures that Profile calls in progress hold, together.
  ByteBudget budget_;
  std::string root_;
};

}  // namespace

absl::StatusOr<fs::path> ResolveRepository(const std::string& configured_root,
                                           const std::string& requested) {
  if (configured_root.empty()) {
    return absl::FailedPreconditionError(
        "this profiler server writes no profiles to disk: no repository root "
        "is configured (ServerOptions::xprof_repository_root or "
        "PODSCOPE_XPROF_REPOSITORY_ROOT); ask for emit_xspace instead");
  }
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(configured_root, ec);
  if (ec || !fs::is_directory(root, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the configured repository root '", configured_root,
                     "' is not a folder"));
  }
  const fs::path asked(requested);
  for (const fs::path& part : asked) {
    if (part == "..") {
      return absl::PermissionDeniedError(absl::StrCat(
          "repository_root '", requested, "' may not contain '..'"));
    }
  }
  const fs::path candidate = asked.is_absolute() ? asked : root / asked;
  const fs::path resolved = fs::weakly_canonical(candidate, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("repository_root '", requested,
                     "' cannot be resolved: ", ec.message()));
  }
  if (!Inside(root, resolved)) {
    return absl::PermissionDeniedError(
        absl::StrCat("repository_root '", requested,
                     "' lies outside this server's repository root"));
  }
  return resolved;
}

std::unique_ptr<tf::ProfilerService::Service> MakeXprofService(
    const ServerOptions& options, std::string token, CaptureHub* hub) {
  return std::make_unique<XprofService>(options, std::move(token), hub);
}

}  // namespace podscope::profiler::internal
