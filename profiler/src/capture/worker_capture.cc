#include "src/capture/worker_capture.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/time.h"
#include "podscope/trace_format/clock_model.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/streamed_file.h"
#include "src/capture/clock_probes.h"
#include "src/capture/worker_connection.h"
#include "src/capture/xprof_capture.h"

namespace podscope::profiler::internal {
namespace {

namespace pb = ::podscope::profiler::proto;
namespace tf = ::podscope::trace_format;

// A failure of this side's file (as opposed to a stream the worker cut
// short or garbled, which StreamedFile reports as DataLoss).
bool IsLocalWriteError(const absl::Status& s) {
  return !s.ok() && s.code() != absl::StatusCode::kDataLoss;
}

// Probes the worker's clock every `interval` while the capture streams,
// so that offset and drift are fitted to probes spread over the whole
// capture rather than to one measurement at each end.
class ProbesThroughCapture {
 public:
  ProbesThroughCapture(const WorkerConnection* worker,
                       std::chrono::milliseconds interval, int burst)
      : worker_(worker), interval_(interval), burst_(burst) {
    thread_ = std::thread([this] { Run(); });
  }
  ~ProbesThroughCapture() { End(); }

  // Stops probing; returns the estimates taken.
  std::vector<ClockEstimate> End() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        over_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
    return std::move(estimates_);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cv_.wait_for(lock, interval_, [&] { return over_; })) {
      lock.unlock();
      auto e = worker_->Probe(burst_);
      lock.lock();
      if (e.ok()) estimates_.push_back(*e);
    }
  }

  const WorkerConnection* const worker_;
  const std::chrono::milliseconds interval_;
  const int burst_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool over_ = false;
  std::vector<ClockEstimate> estimates_;  // guarded by mutex_ until End
  std::thread thread_;
};

struct StreamOutcome {
  grpc::Status status;       // how the worker ended the stream
  absl::Status file_status;  // the first failure to write what arrived
  bool done = false;         // the last message arrived
  bool receiver_indexes = false;
};

// Writes every message of the stream into `file` as it arrives.
StreamOutcome ReceiveStream(
    grpc::ClientContext* ctx,
    grpc::ClientReaderInterface<pb::CaptureData>* reader,
    tf::StreamedFile* file, CancelStopper* stopper, WorkerResult* result,
    CaptureShared* shared) {
  StreamOutcome out;
  pb::CaptureData data;
  while (reader->Read(&data)) {
    if (out.file_status.ok()) {
      out.file_status = file->Append(data.records());
      // Nothing more can be kept: leave the capture (it goes on for the
      // worker's other clients).
      if (IsLocalWriteError(out.file_status)) ctx->TryCancel();
    }
    if (!data.session_id().empty()) stopper->SetSession(data.session_id());
    shared->Received(data.records().size(), data.events() - result->events);
    result->events = data.events();
    result->dropped = data.dropped();
    if (data.done()) {
      out.done = true;
      out.receiver_indexes = data.receiver_indexes();
    }
  }
  out.status = reader->Finish();
  return out;
}

// Why the stream did not give a complete file, or OK.
absl::Status StreamError(const WorkerConnection& worker, const StreamOutcome& o,
                         const tf::StreamedFile& file,
                         const std::string& path) {
  if (IsLocalWriteError(o.file_status)) {
    return absl::Status(o.file_status.code(),
                        absl::StrCat(worker.address(), ": cannot write ", path,
                                     ": ", o.file_status.message()));
  }
  if (!o.status.ok()) return worker.Error("Capture", o.status);
  if (!o.file_status.ok()) {
    return absl::DataLossError(
        absl::StrCat(worker.address(), ": ", o.file_status.message()));
  }
  if (!o.done || (!file.complete() && !o.receiver_indexes)) {
    return absl::DataLossError(absl::StrCat(
        worker.address(),
        ": the capture stream ended before the file was complete"));
  }
  return absl::OkStatus();
}

}  // namespace

bool Cancelled(const CaptureOptions& options) {
  return options.cancel != nullptr &&
         options.cancel->load(std::memory_order_relaxed);
}

CancelStopper::CancelStopper(const CaptureOptions& options, std::string session,
                             Stop stop)
    : options_(options), stop_(std::move(stop)), session_(std::move(session)) {
  if (options.cancel != nullptr) thread_ = std::thread([this] { Run(); });
}

void CancelStopper::SetSession(const std::string& session) {
  std::lock_guard<std::mutex> lock(mutex_);
  session_ = session;
}

void CancelStopper::End() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    over_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CancelStopper::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!over_) {
    if (!Cancelled(options_)) {
      cv_.wait_for(lock, std::chrono::milliseconds(50));
      continue;
    }
    const std::string session = session_;
    lock.unlock();
    stop_(session);
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return over_; });
  }
}

absl::StatusOr<int> CaptureShared::CreateFile(const std::string& host,
                                              int64_t pid, std::string* path) {
  return CreateFileWithStem(
      absl::StrCat(base::SafeFileComponent(host), ".", pid), path);
}

absl::StatusOr<int> CaptureShared::CreateFileWithStem(const std::string& stem,
                                                      std::string* path) {
  base::UniqueFd fd;
  std::string name;
  if (std::error_code e = base::CreateFileExclusive(
          dir_fd_, stem, tf::kFileExtension, &fd, &name)) {
    return absl::InternalError(absl::StrCat(
        "cannot create a file named ", stem, "*",
        std::string(tf::kFileExtension), " in ", dir_, ": ", e.message()));
  }
  *path = (std::filesystem::path(dir_) / name).string();
  return fd.release();
}

void StartGate::Arrive() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--remaining_ == 0) {
    start_realtime_ns_ = base::RealtimeNs() + lead_ms_ * 1'000'000;
    cv_.notify_all();
  }
}

int64_t StartGate::ArriveAndWait() {
  Arrive();
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return remaining_ <= 0; });
  return start_realtime_ns_;
}

void CaptureShared::Streaming(int delta) {
  std::lock_guard<std::mutex> lock(mutex_);
  progress_.streaming += delta;
}

void CaptureShared::Set(const CaptureProgress& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int workers = progress_.workers;
  progress_ = p;
  progress_.workers = workers;
}

void CaptureShared::Received(uint64_t bytes, uint64_t new_events) {
  std::lock_guard<std::mutex> lock(mutex_);
  progress_.bytes += bytes;
  progress_.events += new_events;
}

void CaptureShared::Finished(bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  progress_.finished += 1;
  if (!ok) progress_.failed += 1;
}

pb::CaptureRequest BuildCaptureRequest(const CaptureOptions& options,
                                       const std::string& session) {
  pb::CaptureRequest request;
  request.set_duration_ms(options.duration_ms);
  request.set_session_id(session);
  // A session the user did not name is only this capture's folder name:
  // share whatever capture the worker is running.
  request.set_join_any_session(options.session.empty());
  request.set_level(options.level);
  request.set_sampling_hz(options.sampling_hz);
  request.set_compression_level(-1);
  request.set_client("podscope capture");
  if (options.by_steps) {
    request.set_by_steps(true);
    request.set_first_step(options.first_step);
    request.set_last_step(options.last_step);
  }
  return request;
}

tf::proto::ClockRecord ClockRecordOf(
    const std::vector<ClockEstimate>& estimates) {
  tf::proto::ClockRecord clock;
  for (const ClockEstimate& e : estimates) {
    tf::proto::ClockOffset* o = clock.add_offsets();
    o->set_local_monotonic_ns(e.local_ns);
    o->set_offset_ns(e.offset_ns);
    o->set_uncertainty_ns(e.uncertainty_ns);
    o->set_reference("capture client");
  }
  return clock;
}

void CaptureWorker(const CaptureOptions& options, const std::string& session,
                   WorkerResult* result, CaptureShared* shared, StartGate* gate,
                   XProfHost* xprof) {
  auto fail = [&](const absl::Status& s) {
    result->ok = false;
    result->error = std::string(s.message());
    shared->Finished(false);
  };
  auto connected = WorkerConnection::Connect(result->address, options.connect);
  absl::StatusOr<pb::ProcessInfo> info =
      connected.ok() ? (*connected)->Info() : connected.status();
  // A server without Podscope's service may speak XProf's: its Profile
  // call says.
  const bool speaks_xprof =
      connected.ok() &&
      info.status().code() == absl::StatusCode::kUnimplemented;
  if (speaks_xprof) {
    const int64_t start_realtime_ns = gate->ArriveAndWait();
    absl::Status s = ProfileXProfWorker(options, session, start_realtime_ns,
                                        **connected, shared, result, xprof);
    // Finished once its file is written, after the alignment.
    if (!s.ok()) return fail(s);
    return;
  }
  // Podscope workers start recording as soon as they are asked: only the
  // XProf ones wait for every worker to be reached.
  gate->Arrive();
  if (!info.ok()) return fail(info.status());
  WorkerConnection& worker = **connected;
  result->protocol = "podscope";
  result->producer = info->producer();
  result->alignment = "probes";
  result->host = info->host();
  result->pid = info->pid();
  auto before = worker.Probe(options.clock_probes);
  if (!before.ok()) return fail(before.status());
  result->clock.push_back(*before);
  if (Cancelled(options)) {
    return fail(absl::CancelledError(
        absl::StrCat(result->address, ": cancelled before recording")));
  }
  absl::StatusOr<int> fd =
      shared->CreateFile(info->host(), info->pid(), &result->path);
  if (!fd.ok()) {
    result->write_failed = true;
    return fail(absl::Status(
        fd.status().code(),
        absl::StrCat(result->address, ": ", fd.status().message())));
  }
  std::unique_ptr<tf::StreamedFile> file =
      tf::StreamedFile::Adopt(*fd, result->path);

  grpc::ClientContext ctx;
  // The stream lasts the capture plus the time to drain and close.
  worker.Prepare(&ctx, options.duration_ms + 60'000);
  auto reader =
      worker.stub()->Capture(&ctx, BuildCaptureRequest(options, session));
  shared->Streaming(+1);
  StreamOutcome outcome;
  std::vector<ClockEstimate> probes = {*before};
  {
    CancelStopper stopper(options, options.session.empty() ? "" : session,
                          [&worker](const std::string& recorded) {
                            (void)worker.Stop(recorded);
                          });
    // Probes through the capture take the lean path only: gRPC probes
    // would share the stream's connection and threads.
    std::unique_ptr<ProbesThroughCapture> during;
    if (worker.lean_probes()) {
      during = std::make_unique<ProbesThroughCapture>(
          &worker, std::chrono::milliseconds(100), 4);
    }
    outcome =
        ReceiveStream(&ctx, reader.get(), file.get(), &stopper, result, shared);
    if (during) {
      for (const ClockEstimate& e : during->End()) probes.push_back(e);
    }
  }
  shared->Streaming(-1);
  result->bytes = file->bytes_received();
  result->write_failed = IsLocalWriteError(outcome.file_status);
  absl::Status error = StreamError(worker, outcome, *file, result->path);

  // The last measurement, when the worker is still there; then offset and
  // drift fitted to every probe (with gRPC probes, the two ends alone).
  if (outcome.status.ok()) {
    auto after = worker.Probe(options.clock_probes);
    if (after.ok()) probes.push_back(*after);
  }
  result->clock = worker.lean_probes() ? FitClock(probes) : probes;
  if (!result->clock.empty()) {
    result->alignment_uncertainty_ns = result->clock.front().uncertainty_ns;
    result->alignment_relative_uncertainty_ns =
        result->alignment_uncertainty_ns;
  }
  result->clock_probes = static_cast<int>(probes.size());
  result->clock_probes_discarded = worker.probes_discarded();
  const tf::proto::ClockRecord clock = ClockRecordOf(result->clock);
  result->drift_ppm = tf::ClockModel(clock).DriftPpm();
  if (!result->write_failed) {
    absl::Status added = file->bytes_written() > 0
                             ? file->AddRecord(tf::RecordType::kClock, clock)
                             : absl::OkStatus();
    // Durable before the manifest, written after every worker, vouches
    // for it.
    absl::Status finished =
        file->Finish(/*build_index=*/error.ok() && outcome.receiver_indexes,
                     /*sync=*/true);
    for (const absl::Status& s : {added, finished}) {
      if (s.ok() || !error.ok()) continue;
      result->write_failed = IsLocalWriteError(s);
      error = absl::Status(s.code(),
                           absl::StrCat(result->address, ": cannot write ",
                                        result->path, ": ", s.message()));
    }
  } else {
    // Keep what reached the disk: whole records up to the failure (a torn
    // last record is dropped by Finish).
    (void)file->Finish(/*build_index=*/false);
  }
  if (!error.ok()) return fail(error);
  result->ok = true;
  shared->Finished(true);
}

}  // namespace podscope::profiler::internal
