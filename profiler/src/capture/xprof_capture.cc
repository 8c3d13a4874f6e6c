#include "src/capture/xprof_capture.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/time.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/xspace.h"
#include "src/capture/clock_probes.h"

namespace podscope::profiler::internal {
namespace {

namespace xp = ::tensorflow::profiler;
namespace tf = ::podscope::trace_format;

std::string HostOfXSpace(const xp::XSpace& space, const std::string& address) {
  if (!space.hostnames().empty() && !space.hostnames(0).empty()) {
    return space.hostnames(0);
  }
  return HostOfAddress(address);
}

std::string Describe(const grpc::Status& s) {
  return absl::StrCat("code ", static_cast<int>(s.error_code()), ": ",
                      s.error_message());
}

}  // namespace

absl::Status NotAProfileResponse(const WorkerConnection& worker) {
  return absl::DataLossError(absl::StrCat(
      worker.address(),
      ": answered Profile with bytes that are not a ProfileResponse (a "
      "damaged answer, or not an XProf server); nothing was written"));
}

namespace {

// The error of a failed Profile call, in the words a user needs.
absl::Status ProfileError(const CaptureOptions& options,
                          const WorkerConnection& worker,
                          const grpc::Status& s) {
  const std::string& a = worker.address();
  const std::string& m = s.error_message();
  const std::string lower = absl::AsciiStrToLower(m);
  auto says = [&](const char* w) { return lower.find(w) != std::string::npos; };
  switch (s.error_code()) {
    case grpc::StatusCode::UNIMPLEMENTED:
      // What gRPC reports when the answer did not parse.
      if (says("no message returned")) return NotAProfileResponse(worker);
      return WorkerConnection::SpeaksNeither(a);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      if (says("larger than max") || says("message larger")) {
        return absl::ResourceExhaustedError(absl::StrCat(
            a, ": its trace is larger than this client's message limit of ",
            options.connect.max_message_mb,
            " MiB; raise it with --max_message_mb (up to 2047) or capture a "
            "shorter duration (",
            m, ")"));
      }
      break;
    default:
      break;
  }
  const bool busy = s.error_code() == grpc::StatusCode::ALREADY_EXISTS ||
                    s.error_code() == grpc::StatusCode::ABORTED ||
                    (says("profil") &&
                     (says("already") || says("another") || says("active")));
  if (busy) {
    return absl::FailedPreconditionError(absl::StrCat(
        a,
        ": is already profiling (another capture, TensorBoard's say, is "
        "running on it); try again when it ends (",
        Describe(s), ")"));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(a, ": Profile failed: ", Describe(s)));
}

absl::Status WriteXPlane(const CaptureOptions& options,
                         const std::string& session, const std::string& host,
                         const xp::XSpace& space, std::string* path) {
  const std::filesystem::path dir =
      std::filesystem::path(options.logdir) / "plugins" / "profile" / session;
  std::string failed_part;
  if (std::error_code e = base::MakeDirectories(dir.string(), &failed_part)) {
    return absl::InternalError(
        absl::StrCat("cannot create ", failed_part, ": ", e.message()));
  }
  base::UniqueFd dir_fd, fd;
  std::string name;
  std::error_code e = base::OpenDirectory(dir.string(), &dir_fd);
  if (!e) {
    e = base::CreateFileExclusive(dir_fd.get(), base::SafeFileComponent(host),
                                  ".xplane.pb", &fd, &name);
  }
  *path = (dir / (name.empty() ? host + ".xplane.pb" : name)).string();
  if (!e) e = base::WriteFully(fd.get(), space.SerializeAsString());
  if (!e && ::fsync(fd.get()) != 0)
    e = std::error_code(errno, std::generic_category());
  if (e) {
    return absl::InternalError(
        absl::StrCat("cannot write ", *path, ": ", e.message()));
  }
  return absl::OkStatus();
}

// The answer's XSpace: in `xspace` (emit_xspace), else, from a server that
// predates that field, the `tool_data` named `*.xplane.pb`.
absl::Status TakeXSpace(const WorkerConnection& worker,
                        tensorflow::ProfileResponse* response,
                        xp::XSpace* space) {
  if (response->has_xspace() || response->tool_data().empty()) {
    *space = std::move(*response->mutable_xspace());
    return absl::OkStatus();
  }
  for (const tensorflow::ProfileToolData& tool : response->tool_data()) {
    if (!tool.name().ends_with("xplane.pb")) continue;
    if (tool.data().size() > static_cast<size_t>(INT32_MAX) ||
        !space->ParseFromString(tool.data())) {
      return absl::DataLossError(absl::StrCat(
          worker.address(), ": its tool_data '", tool.name().substr(0, 100),
          "' is not a valid XSpace (damaged or truncated)"));
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

tensorflow::ProfileRequest BuildProfileRequest(const CaptureOptions& options,
                                               const std::string& session,
                                               const std::string& host_name,
                                               int64_t start_realtime_ns) {
  tensorflow::ProfileRequest request;
  request.set_duration_ms(options.duration_ms);
  request.set_session_id(session);
  request.set_host_name(host_name);
  request.set_emit_xspace(true);
  request.add_tools("xplane.pb");
  tensorflow::ProfileOptions* opts = request.mutable_opts();
  // Version 1: the tracer levels are read as given (0 means off).
  opts->set_version(1);
  opts->set_host_tracer_level(options.host_tracer_level);
  opts->set_device_tracer_level(options.device_tracer_level);
  opts->set_python_tracer_level(options.python_tracer_level);
  opts->set_duration_ms(options.duration_ms);
  opts->set_start_timestamp_ns(static_cast<uint64_t>(start_realtime_ns));
  return request;
}

AlignInput AlignInputOf(const xp::XSpace& space, int64_t sent_ns,
                        int64_t received_ns, int64_t wallclock_offset_ns,
                        uint64_t* events) {
  tf::XSpaceCollectives c = tf::CollectivesOfXSpace(space);
  AlignInput in;
  in.wallclock_offset_ns = wallclock_offset_ns;
  *events = c.events;
  if (c.has_span) {
    in.has_rpc = true;
    in.rpc_lo_ns = sent_ns - c.first_ns;
    in.rpc_hi_ns = received_ns - c.last_ns;
  }
  in.collective_ends = std::move(c.ends);
  return in;
}

tensorflow::ProfileRequest StartXProfProfile(const CaptureOptions& options,
                                             const std::string& session,
                                             int64_t start_realtime_ns,
                                             WorkerConnection& worker,
                                             WorkerResult* result) {
  result->protocol = "xprof";
  if (worker.has_token()) {
    if (!options.connect.token.empty()) {
      result->notes.push_back(
          "the token was not sent: XProf servers check none");
    }
    worker.DropToken();
  }
  result->start_timestamp_ns = start_realtime_ns;
  return BuildProfileRequest(options, session, HostOfAddress(worker.address()),
                             start_realtime_ns);
}

int64_t XProfCallTimeoutMs(const CaptureOptions& options,
                           int64_t start_realtime_ns) {
  const int64_t wait_ms = std::max<int64_t>(
      0, (start_realtime_ns - base::RealtimeNs()) / 1'000'000);
  return wait_ms + options.duration_ms + 60'000;
}

absl::Status FinishXProfProfile(const CaptureOptions& options,
                                const WorkerConnection& worker,
                                const grpc::Status& s,
                                tensorflow::ProfileResponse* response,
                                int64_t sent_ns, int64_t received_ns,
                                CaptureShared* shared, WorkerResult* result,
                                XProfHost* host) {
  const int64_t wallclock = MonotonicNs() - base::RealtimeNs();
  if (!s.ok()) return ProfileError(options, worker, s);
  if (absl::Status taken = TakeXSpace(worker, response, &host->space);
      !taken.ok()) {
    return taken;
  }
  host->align =
      AlignInputOf(host->space, sent_ns, received_ns, wallclock, &host->events);
  if (response->empty_trace() || host->events == 0) {
    return absl::NotFoundError(absl::StrCat(
        worker.address(),
        ": recorded nothing (empty_trace): was the program running, and "
        "its device in use, during the capture?"));
  }
  result->host = HostOfXSpace(host->space, worker.address());
  result->producer = absl::StrCat("tensorflow.ProfilerService, XSpace of ",
                                  host->space.planes_size(), " planes");
  result->events = host->events;
  shared->Received(response->ByteSizeLong(), host->events);
  host->captured = true;
  return absl::OkStatus();
}

absl::Status WriteXProfHost(const CaptureOptions& options,
                            const std::string& session,
                            const HostAlignment& alignment,
                            CaptureShared* shared, XProfHost* host,
                            WorkerResult* result) {
  result->alignment = std::string(AlignMethodName(alignment.method));
  result->alignment_uncertainty_ns = alignment.uncertainty_ns;
  result->alignment_relative_uncertainty_ns = alignment.relative_uncertainty_ns;
  result->alignment_note = alignment.note;
  ClockEstimate estimate;
  estimate.offset_ns = alignment.offset_ns;
  // Not known (wallclock): the file states no bound either.
  estimate.uncertainty_ns = std::max<int64_t>(alignment.uncertainty_ns, 0);
  result->clock = {estimate};

  tf::XSpaceImportFacts facts;
  facts.source = absl::StrCat(result->address, " (tensorflow.ProfilerService)");
  facts.session = session;
  facts.host = result->host;
  // On the client's clock like the Podscope workers' files of the
  // session; with wallclock, -1: no bound is known.
  tf::proto::ClockOffset o;
  o.set_local_monotonic_ns(0);
  o.set_offset_ns(alignment.offset_ns);
  o.set_uncertainty_ns(alignment.uncertainty_ns);
  o.set_reference("capture client");
  facts.clock.push_back(o);
  facts.attributes = {{"capture_protocol", "xprof"},
                      {"capture_address", result->address},
                      {"clock_alignment", result->alignment},
                      {"clock_alignment_uncertainty_ns",
                       absl::StrCat(alignment.uncertainty_ns)},
                      {"clock_alignment_relative_uncertainty_ns",
                       absl::StrCat(alignment.relative_uncertainty_ns)}};
  if (!alignment.note.empty()) {
    facts.attributes.emplace_back("clock_alignment_note", alignment.note);
  }
  absl::StatusOr<int> fd = shared->CreateFileWithStem(
      base::SafeFileComponent(result->host), &result->path);
  if (!fd.ok()) {
    result->write_failed = true;
    return absl::Status(
        fd.status().code(),
        absl::StrCat(result->address, ": ", fd.status().message()));
  }
  tf::WriterOptions wo;
  wo.sync_on_flush = true;
  auto writer =
      tf::TraceWriter::Create(tf::AdoptFileSink(*fd, result->path), wo);
  if (!writer.ok()) return writer.status();
  auto stats = tf::XSpaceToPodtrace(host->space, facts, **writer);
  absl::Status closed = (*writer)->Close();
  if (!stats.ok()) return stats.status();
  if (!closed.ok()) {
    result->write_failed = true;
    return absl::Status(closed.code(),
                        absl::StrCat(result->address, ": cannot write ",
                                     result->path, ": ", closed.message()));
  }
  result->events = stats->events;
  std::error_code size_error;
  result->bytes = std::filesystem::file_size(result->path, size_error);
  if (options.also_xplane) {
    if (absl::Status s = WriteXPlane(options, session, result->host,
                                     host->space, &result->xplane_path);
        !s.ok()) {
      result->write_failed = true;
      return absl::Status(s.code(),
                          absl::StrCat(result->address, ": ", s.message()));
    }
  }
  // The XSpace is written out: its memory goes back before the manifest.
  host->space.Clear();
  return absl::OkStatus();
}

}  // namespace podscope::profiler::internal
