// A worker-side capture of one Podscope worker: the worker writes its own
// file under its capture root; this side sends the request (the session,
// the common start on the worker's clock or the window of steps, and the
// clock probes it took) and receives progress and, at the end, the file's
// name, size and crc32.
#include <sys/stat.h>

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/time.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/format.h"
#include "src/capture/worker_capture.h"
#include "src/capture/worker_connection.h"

namespace podscope::profiler::internal {
namespace {

namespace pb = ::podscope::profiler::proto;

// The worker names its file; it must be `<session>/<one safe name>.podtrace`
// (a worker cannot make this side look anywhere else).
absl::StatusOr<std::string> CheckedFileName(const std::string& session,
                                            const std::string& path) {
  const std::string prefix = session + "/";
  const std::string_view ext = trace_format::kFileExtension;
  if (path.size() <= prefix.size() + ext.size() ||
      path.compare(0, prefix.size(), prefix) != 0) {
    return absl::DataLossError("the worker named a file outside the session");
  }
  const std::string name = path.substr(prefix.size());
  if (!base::IsSafeFileComponent(name) ||
      name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
    return absl::DataLossError(absl::StrCat(
        "the worker named its file '", base::SafeFileComponent(name),
        "', not one <host>.<pid>", std::string(ext), " file name"));
  }
  return name;
}

}  // namespace

void CaptureWorkerWrites(const CaptureOptions& options,
                         const std::string& session, WorkerConnection& worker,
                         const ClockEstimate& before, StartGate* gate,
                         WorkerResult* result, CaptureShared* shared) {
  auto fail = [&](const std::string& why) {
    result->ok = false;
    result->error = absl::StrCat(result->address, ": ", why);
    shared->Finished(false);
  };
  result->written_by_worker = true;
  // The file lines up by this probe unless it carries its job's clock.
  result->clock_probes = 1;
  result->alignment_uncertainty_ns = before.uncertainty_ns;
  result->alignment_relative_uncertainty_ns = before.uncertainty_ns;
  pb::CaptureRequest request = BuildCaptureRequest(options, session);
  request.set_worker_writes(true);
  request.set_join_any_session(false);
  pb::WorkerFile file;
  int64_t lead_ms = 0;
  if (!options.by_steps && gate != nullptr) {
    // The common start on this side's clock, then on the worker's:
    // local = reference - offset.
    const int64_t start_realtime = gate->ArriveAndWait();
    const int64_t start_mono =
        start_realtime - (base::RealtimeNs() - MonotonicNs());
    result->start_at_ns = start_mono - before.offset_ns;
    request.set_start_at_ns(result->start_at_ns);
    lead_ms = std::max<int64_t>(0, (start_mono - MonotonicNs()) / 1'000'000);
  }
  trace_format::proto::ClockOffset* o = request.add_clock_offsets();
  o->set_local_monotonic_ns(before.local_ns);
  o->set_offset_ns(before.offset_ns);
  o->set_uncertainty_ns(before.uncertainty_ns);
  o->set_reference("capture client");
  if (Cancelled(options)) return fail("cancelled before recording");

  grpc::ClientContext ctx;
  worker.Prepare(&ctx, lead_ms + options.duration_ms + 60'000);
  auto reader = worker.stub()->Capture(&ctx, request);
  shared->Streaming(+1);
  bool got_file = false;
  {
    CancelStopper stopper(options, session,
                          [&worker](const std::string& recorded) {
                            (void)worker.Stop(recorded);
                          });
    pb::CaptureData data;
    while (reader->Read(&data)) {
      // Progress only: the worker's counts, never more than it says.
      if (data.events() > result->events) {
        shared->Received(0, data.events() - result->events);
        result->events = data.events();
      }
      result->dropped = data.dropped();
      result->bytes = data.file_bytes();
      if (data.done() && data.has_file()) {
        file = data.file();
        got_file = true;
      }
    }
  }
  const grpc::Status status = reader->Finish();
  shared->Streaming(-1);
  if (got_file) {
    result->bytes = file.bytes();
    result->crc32 = file.crc32();
    result->window_start_ns = file.window_start_ns();
    result->window_end_ns = file.window_end_ns();
    result->job_clock = file.job_clock();
    if (result->job_clock) result->alignment = "job clock";
    absl::StatusOr<std::string> name = CheckedFileName(session, file.path());
    if (!name.ok()) return fail(std::string(name.status().message()));
    result->path = absl::StrCat(options.logdir, "/", session, "/", *name);
  }
  if (!status.ok()) {
    return fail(
        absl::StrCat("the worker-side capture failed: ", status.error_message(),
                     got_file ? " (its file holds what it recorded)" : ""));
  }
  if (!got_file) return fail("the worker ended without naming its file");
  // When this side shares the folder, the file is there and whole.
  struct stat st;
  if (::stat(result->path.c_str(), &st) == 0) {
    if (static_cast<uint64_t>(st.st_size) != result->bytes) {
      return fail(absl::StrCat(result->path, " has ", st.st_size,
                               " bytes; the worker wrote ", result->bytes));
    }
    result->file_seen = true;
  }
  result->ok = true;
  shared->Finished(true);
}

}  // namespace podscope::profiler::internal
