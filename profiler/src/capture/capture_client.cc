// CaptureWorkers: the workers driven by a fixed number of threads (streamed,
// worker_capture.h; worker-side, worker_writes.cc; or relayed), a progress
// reporter, and the manifest once every worker is done.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/mutex_checks.h"
#include "podscope/base/status_macros.h"
#include "podscope/base/time.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "src/capture/manifest.h"
#include "src/capture/worker_capture.h"
#include "src/capture/worker_connection.h"
#include "src/capture/xprof_capture.h"
#include "src/session_internal.h"

namespace podscope::profiler {
namespace {

// What a capture asks of every worker, whoever reaches them.
absl::Status CheckRequestFields(const CaptureOptions& options) {
  if (options.duration_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("capture: the duration must be positive, not ",
                     options.duration_ms, " ms"));
  }
  if (options.clock_probes < 1 || options.clock_probes > 1000) {
    return absl::InvalidArgumentError("capture: clock_probes must be 1..1000");
  }
  if (options.host_tracer_level < 0 || options.host_tracer_level > 3 ||
      options.device_tracer_level < 0 || options.device_tracer_level > 1 ||
      options.python_tracer_level < 0 || options.python_tracer_level > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture: the XProf tracer levels must be host 0..3, device 0..1, "
        "python 0..1, not ",
        options.host_tracer_level, ", ", options.device_tracer_level, ", ",
        options.python_tracer_level));
  }
  if (auto m = internal::ParseAlignMethod(options.align); !m.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("capture: ", m.status().message()));
  }
  if (options.start_lead_ms < 0 || options.start_lead_ms > 60'000) {
    return absl::InvalidArgumentError(
        "capture: start_lead_ms must be 0..60000");
  }
  if (options.by_steps &&
      (options.first_step < 0 || options.last_step < options.first_step)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture: the steps must be FIRST:LAST with 0 <= FIRST <= LAST, not ",
        options.first_step, ":", options.last_step));
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const CaptureOptions& options) {
  if (options.workers.empty()) {
    return absl::InvalidArgumentError("capture: no workers to capture");
  }
  if (options.logdir.empty()) {
    return absl::InvalidArgumentError("capture: no log directory");
  }
  PODSCOPE_RETURN_IF_ERROR(CheckRequestFields(options));
  if (!options.ranks.empty() &&
      options.ranks.size() != options.workers.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("capture: ", options.ranks.size(), " ranks for ",
                     options.workers.size(), " workers"));
  }
  return absl::OkStatus();
}

using base::RealtimeNs;

// The session folder's own entry, when this capture made it.
absl::Status SyncParentFolder(const std::filesystem::path& dir) {
  const std::string parent = dir.parent_path().string();
  base::UniqueFd fd;
  std::error_code e = base::OpenDirectory(parent.empty() ? "." : parent, &fd);
  if (!e) e = base::SyncDirectory(fd.get());
  if (!e) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("cannot sync the folder ", parent, ": ", e.message()));
}

// Aligns the XProf hosts' clocks together and writes their files.
void WriteXProfHosts(const CaptureOptions& options, const std::string& session,
                     internal::CaptureShared* shared,
                     std::vector<internal::XProfHost>* hosts,
                     CaptureResult* result) {
  std::vector<size_t> captured;
  std::vector<internal::AlignInput> inputs;
  for (size_t i = 0; i < hosts->size(); ++i) {
    if (!(*hosts)[i].captured) continue;
    captured.push_back(i);
    inputs.push_back((*hosts)[i].align);
  }
  internal::AlignOptions align;
  align.method = *internal::ParseAlignMethod(options.align);
  const std::vector<internal::HostAlignment> aligned =
      internal::AlignHosts(inputs, align);
  // Converting an XSpace takes one core: as many at once as there are.
  std::atomic<size_t> next{0};
  auto write = [&] {
    for (size_t k = next++; k < captured.size(); k = next++) {
      const size_t i = captured[k];
      WorkerResult& w = result->workers[i];
      absl::Status s = internal::WriteXProfHost(options, session, aligned[k],
                                                shared, &(*hosts)[i], &w);
      w.ok = s.ok();
      if (!s.ok()) w.error = std::string(s.message());
      shared->Finished(s.ok());
    }
  };
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> writers;
  for (size_t t = 1; t < std::min(cores, captured.size()); ++t) {
    writers.emplace_back(write);
  }
  write();
  for (std::thread& t : writers) t.join();
}

}  // namespace

absl::StatusOr<ClockEstimate> MeasureClockOffset(const std::string& address,
                                                 const ConnectOptions& connect,
                                                 int probes) {
  auto worker = internal::WorkerConnection::Connect(address, connect);
  if (!worker.ok()) return worker.status();
  if (auto info = (*worker)->Info(); !info.ok()) return info.status();
  return (*worker)->Probe(probes);
}

namespace {

// Runs `ask(i)` for every worker, 16 at a time, until it returns false.
void AskEveryWorker(size_t n, const std::function<bool(size_t)>& ask) {
  std::atomic<size_t> next{0};
  std::atomic<bool> go_on{true};
  auto loop = [&] {
    for (size_t i = next++; i < n && go_on.load(); i = next++) {
      if (!ask(i)) go_on = false;
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 1; t < std::min<size_t>(16, n); ++t) {
    threads.emplace_back(loop);
  }
  loop();
  for (std::thread& t : threads) t.join();
}

}  // namespace

bool EveryWorkerWritesItsOwnFile(const std::vector<std::string>& workers,
                                 const ConnectOptions& connect) {
  if (workers.empty()) return false;
  std::atomic<bool> all{true};
  AskEveryWorker(workers.size(), [&](size_t i) {
    auto worker = internal::WorkerConnection::Connect(workers[i], connect);
    absl::StatusOr<proto::ProcessInfo> info =
        worker.ok() ? (*worker)->Info() : worker.status();
    if (!info.ok() || !info->worker_writes()) all = false;
    return all.load();
  });
  return all.load();
}

std::vector<WorkerProtocol> FindWorkerProtocols(
    const std::vector<std::string>& workers, const ConnectOptions& connect) {
  std::vector<WorkerProtocol> out(workers.size());
  AskEveryWorker(workers.size(), [&](size_t i) {
    WorkerProtocol& w = out[i];
    w.address = workers[i];
    auto worker = internal::WorkerConnection::Connect(workers[i], connect);
    if (!worker.ok()) {
      w.error = std::string(worker.status().message());
      return true;
    }
    absl::StatusOr<proto::ProcessInfo> info = (*worker)->Info();
    if (info.ok()) {
      w.protocol = "podscope";
      w.host = info->host();
      w.pid = info->pid();
      w.producer = info->producer();
      w.writes_own_file = info->worker_writes();
      return true;
    }
    if (info.status().code() != absl::StatusCode::kUnimplemented) {
      w.error = std::string(info.status().message());
      return true;
    }
    // XProf servers check no token: none is sent to them.
    (*worker)->DropToken();
    grpc::ClientContext ctx;
    (*worker)->Prepare(&ctx, connect.connect_timeout_ms);
    tensorflow::TerminateRequest request;
    request.set_session_id(kProtocolCheckSession);
    tensorflow::TerminateResponse response;
    const grpc::Status s =
        (*worker)->xprof_stub()->Terminate(&ctx, request, &response);
    if (s.ok()) {
      w.protocol = "xprof";
    } else if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      w.error = std::string(
          internal::WorkerConnection::SpeaksNeither(workers[i]).message());
    } else {
      w.error = std::string((*worker)->Error("Terminate", s).message());
    }
    return true;
  });
  return out;
}

namespace {

// Calls `progress` every 250 ms from a thread of its own until Stop (or
// its end), with the elapsed time since `t0`.
class ProgressReporter {
 public:
  ProgressReporter(const std::function<void(const CaptureProgress&)>& progress,
                   internal::CaptureShared* shared, int64_t t0) {
    if (!progress) return;
    thread_ = std::thread([this, &progress, shared, t0] {
      std::unique_lock<std::mutex> lock(mutex_);
      while (!cv_.wait_for(lock, std::chrono::milliseconds(250),
                           [&] { return done_; })) {
        lock.unlock();
        CaptureProgress p = shared->progress();
        p.elapsed_ms = (MonotonicNs() - t0) / 1'000'000;
        progress(p);
        lock.lock();
      }
    });
  }
  ~ProgressReporter() { Stop(); }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace

absl::Status CheckRelayOptions(const CaptureOptions& options) {
  PODSCOPE_RETURN_IF_ERROR(CheckRequestFields(options));
  if (!IsValidSessionId(options.session)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture: session '", base::SafeFileComponent(options.session),
        "' is not a single folder name"));
  }
  return absl::OkStatus();
}

std::vector<WorkerResult> RelayWorkerCaptures(const CaptureOptions& options) {
  std::vector<WorkerResult> results(options.workers.size());
  for (size_t i = 0; i < options.workers.size(); ++i) {
    results[i].address = options.workers[i];
    if (i < options.ranks.size()) results[i].rank = options.ranks[i];
  }
  const absl::Status s = CheckRelayOptions(options);
  if (!s.ok()) {
    for (WorkerResult& w : results) w.error = std::string(s.message());
    return results;
  }
  CaptureOptions relay = options;
  relay.logdir.clear();
  relay.worker_writes = true;
  const int64_t t0 = MonotonicNs();
  internal::CaptureShared shared(static_cast<int>(relay.workers.size()), "",
                                 -1);
  ProgressReporter reporter(relay.progress, &shared, t0);
  internal::CaptureWorkersWriting(relay, relay.session, &shared, &results);
  reporter.Stop();
  return results;
}

namespace {

// A relayed worker's file, as the relay named it: its name is checked, and
// the file looked for under logdir (the folder every worker shares, as a
// worker-side capture of this side's own would).
void CheckRelayedFile(const CaptureOptions& options, const std::string& session,
                      WorkerResult* w) {
  if (w->path.empty()) return;
  absl::StatusOr<std::string> name =
      internal::CheckedWorkerFileName(session, w->path);
  if (!name.ok()) {
    w->path.clear();
    w->ok = false;
    w->error = absl::StrCat(w->address, ": ", name.status().message());
    return;
  }
  w->path = absl::StrCat(options.logdir, "/", session, "/", *name);
  absl::Status whole =
      internal::LookForWorkerFile(w->path, w->bytes, &w->file_seen);
  if (!whole.ok() && w->ok) {
    w->ok = false;
    w->error = absl::StrCat(w->address, ": ", whole.message());
  }
}

}  // namespace

absl::StatusOr<CaptureResult> CaptureWorkers(const CaptureOptions& options) {
  base::TurnOffMutexDeadlockDetection();
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  CaptureResult result;
  result.session = options.session.empty()
                       ? internal::UtcSessionId(/*with_millis=*/false)
                       : options.session;
  if (!IsValidSessionId(result.session)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture: session '", result.session,
        "' is not a single folder name (letters, digits, '-', '_', '.', ':', "
        "'+', not starting with '.' or '-'; at most 128)"));
  }
  const std::filesystem::path dir =
      std::filesystem::path(options.logdir) / result.session;
  result.session_dir = dir.string();
  std::string failed_part;
  if (std::error_code e =
          base::MakeDirectories(result.session_dir, &failed_part)) {
    return absl::InternalError(absl::StrCat("capture: cannot create ",
                                            failed_part, ": ", e.message()));
  }
  // Every file of the capture is made relative to this descriptor: a
  // folder swapped for a link meanwhile does not redirect them.
  base::UniqueFd dir_fd;
  if (std::error_code e = base::OpenDirectory(result.session_dir, &dir_fd)) {
    return absl::InternalError(absl::StrCat("capture: cannot open ",
                                            result.session_dir,
                                            " as a folder: ", e.message()));
  }
  result.manifest_path = (dir / "manifest.json").string();
  result.workers.resize(options.workers.size());
  for (size_t i = 0; i < options.workers.size(); ++i) {
    result.workers[i].address = options.workers[i];
    if (!options.ranks.empty()) result.workers[i].rank = options.ranks[i];
  }

  const int64_t started_realtime = RealtimeNs();
  const int64_t t0 = MonotonicNs();
  internal::CaptureShared shared(static_cast<int>(options.workers.size()),
                                 result.session_dir, dir_fd.get());
  internal::StartGate gate(static_cast<int>(options.workers.size()),
                           options.start_lead_ms);
  std::vector<internal::XProfHost> xprof(options.workers.size());
  // One thread drives the workers, whatever their number: streamed (each
  // worker's file written here), worker-side (the pod's path) or relayed.
  std::thread fanout;
  absl::Status relayed;
  if (options.relay) {
    fanout = std::thread([&] {
      relayed = options.relay(&result.workers,
                              [&](const CaptureProgress& p) { shared.Set(p); });
    });
  } else if (options.worker_writes) {
    fanout = std::thread([&] {
      internal::CaptureWorkersWriting(options, result.session, &shared,
                                      &result.workers);
    });
  } else {
    fanout = std::thread([&] {
      internal::CaptureWorkersStreaming(options, result.session, &shared, &gate,
                                        &result.workers, &xprof);
    });
  }
  ProgressReporter reporter(options.progress, &shared, t0);
  if (fanout.joinable()) fanout.join();
  WriteXProfHosts(options, result.session, &shared, &xprof, &result);
  reporter.Stop();
  result.cancelled = options.cancel != nullptr && options.cancel->load();
  if (options.relay) {
    if (!relayed.ok()) {
      // Nothing was recorded: no folder is left (one that held other
      // files stays).
      std::error_code ignored;
      std::filesystem::remove(dir, ignored);
      return relayed;
    }
    for (WorkerResult& w : result.workers) {
      CheckRelayedFile(options, result.session, &w);
    }
  }
  const int64_t wall_ms = (MonotonicNs() - t0) / 1'000'000;
  // A capture in which no worker answered or wrote anything leaves no
  // folder holding only a manifest that vouches for nothing: the folder is
  // removed when empty (a folder that held other files stays).
  bool any_file = false;
  for (const WorkerResult& w : result.workers) {
    any_file |= w.ok || (!w.path.empty() && w.bytes > 0);
  }
  if (!any_file) {
    std::error_code ignored;
    std::filesystem::remove(dir, ignored);
    result.manifest_path.clear();
    return result;
  }
  // Each worker's file is on disk already (CaptureWorker syncs it before
  // it counts as ok); the manifest that vouches for them comes after.
  absl::Status written = internal::WriteFileAtomically(
      dir_fd.get(), result.session_dir, "manifest.json",
      internal::ManifestJson(options, result, started_realtime, wall_ms));
  if (written.ok()) written = SyncParentFolder(dir);
  if (!written.ok()) {
    result.manifest_error = std::string(written.message());
    result.manifest_path.clear();
  }
  return result;
}

}  // namespace podscope::profiler
