#include "src/capture/worker_capture.h"

#include <grpcpp/alarm.h>
#include <grpcpp/generic/generic_stub.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/time.h"
#include "podscope/profiler/clock.h"
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

struct StreamOutcome {
  grpc::Status status;       // how the worker ended the stream
  absl::Status file_status;  // the first failure to write what arrived
  bool done = false;         // the last message arrived
  bool receiver_indexes = false;
};

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

absl::Status LookForWorkerFile(const std::string& path, uint64_t bytes,
                               bool* seen) {
  *seen = false;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (static_cast<uint64_t>(st.st_size) != bytes) {
    return absl::DataLossError(absl::StrCat(
        path, " has ", st.st_size, " bytes; the worker wrote ", bytes));
  }
  *seen = true;
  return absl::OkStatus();
}

bool Cancelled(const CaptureOptions& options) {
  return options.cancel != nullptr &&
         options.cancel->load(std::memory_order_relaxed);
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
  }
}

bool StartGate::Ready(int64_t* start_realtime_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (remaining_ > 0) return false;
  *start_realtime_ns = start_realtime_ns_;
  return true;
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

namespace {

// One worker's capture: for a Podscope worker, its stream (started on the
// queue's thread, its clock probed and its file ended on the pool); for an
// XProf worker, its Profile call (answered on the queue, converted on the
// pool).
struct StreamJob {
  enum Op { kInfo, kStarted, kRead, kFinish, kStop, kProfiled };
  static constexpr int kOps = 6;
  struct Tag {
    StreamJob* job;
    Op op;
  };
  WorkerResult* result = nullptr;
  std::unique_ptr<WorkerConnection> worker;
  // Who the worker is (an asynchronous GetInfo), or why its channel could
  // not be opened (handed to the queue by the alarm).
  pb::ProcessInfo info;
  grpc::Status info_status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::ProcessInfo>> info_call;
  absl::Status open_status;
  grpc::Alarm open_failed;
  std::vector<ClockEstimate> probes;  // before the capture
  std::unique_ptr<tf::StreamedFile> file;
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientAsyncReader<pb::CaptureData>> reader;
  pb::CaptureData data;
  StreamOutcome outcome;
  // The session the worker records (one this client may have joined):
  // what a cancel asks it to stop.
  std::string recorded;
  bool finishing = false;
  // A cancel's Stop (Terminate for an XProf worker) in flight, and when the
  // last was sent.
  bool stop_in_flight = false;
  int64_t stop_sent_ns = 0;
  std::unique_ptr<grpc::ClientContext> stop_ctx;
  pb::StopResponse stop_response;
  grpc::Status stop_status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::StopResponse>> stop_call;
  tensorflow::TerminateResponse terminate_response;
  std::unique_ptr<
      grpc::ClientAsyncResponseReader<tensorflow::TerminateResponse>>
      terminate_call;
  // An XProf worker: its Profile call.
  bool xprof = false;
  // Its answer as bytes, parsed here: a damaged answer is an error of its
  // own, not an empty one.
  std::unique_ptr<grpc::GenericStub> generic;
  grpc::ByteBuffer profile_bytes;
  grpc::Status profile_status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<grpc::ByteBuffer>>
      profile_call;
  int64_t profile_sent_ns = 0;
  int64_t profile_received_ns = 0;
  // Probes through the capture (ThroughCaptureProbes).
  std::mutex probe_mutex;
  std::vector<ClockEstimate> during;  // guarded by probe_mutex
  // The setup (its first clock probe is taken once the stream has started)
  // and the stream must both be over before the worker is ended.
  std::atomic<int> pending{2};
  absl::Status probe_error;  // of the first probe, when it failed
  Tag tags[kOps];
  void* tag(Op op) { return &tags[op]; }
};

// Probes every recording worker's clock every 100 ms (the best of 4 each,
// on its UDP probe port: gRPC probes would share the stream's connection),
// so that offset and drift are fitted to probes spread over the whole
// capture rather than to one measurement at each end. One thread for all.
class ThroughCaptureProbes {
 public:
  ThroughCaptureProbes() : thread_([this] { Run(); }) {}
  ~ThroughCaptureProbes() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      over_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Add(StreamJob* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(job);
  }
  // Stops probing `job`; its estimates are then its own.
  void Remove(StreamJob* job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.erase(std::remove(jobs_.begin(), jobs_.end(), job), jobs_.end());
    }
    // A probe of it under way ends first.
    std::lock_guard<std::mutex> wait(job->probe_mutex);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100),
                         [&] { return over_; })) {
      const std::vector<StreamJob*> jobs = jobs_;
      for (StreamJob* job : jobs) {
        if (over_) return;
        // A job removed meanwhile (its worker may be gone) is not probed.
        if (std::find(jobs_.begin(), jobs_.end(), job) == jobs_.end()) {
          continue;
        }
        // Taken before the list's lock is let go: Remove waits for it.
        std::unique_lock<std::mutex> probing(job->probe_mutex);
        lock.unlock();
        auto e = job->worker->Probe(4);
        if (e.ok()) job->during.push_back(*e);
        probing.unlock();
        lock.lock();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<StreamJob*> jobs_;  // guarded by mutex_
  bool over_ = false;             // guarded by mutex_
  std::thread thread_;
};

// A fixed number of threads for the workers' blocking steps.
class WorkPool {
 public:
  explicit WorkPool(size_t threads) {
    for (size_t i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { Run(); });
    }
  }
  ~WorkPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      over_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return over_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool over_ = false;                        // guarded by mutex_
  std::vector<std::thread> threads_;
};

// Streamed captures of every worker with a fixed number of threads: the
// pool sets each worker up and ends it, this thread receives every stream
// into its file through one completion queue and relays a cancel, one
// thread probes the recording workers' clocks. XProf workers (a unary
// Profile call that lasts the capture) keep a thread each.
class StreamFanout {
 public:
  static constexpr size_t kPoolThreads = 8;

  StreamFanout(const CaptureOptions& options, const std::string& session,
               CaptureShared* shared, StartGate* gate,
               std::vector<WorkerResult>* results,
               std::vector<XProfHost>* xprof)
      : options_(options),
        session_(session),
        shared_(shared),
        gate_(gate),
        xprof_(xprof),
        jobs_(results->size()),
        pool_(std::min(kPoolThreads, std::max<size_t>(1, results->size()))) {
    for (size_t i = 0; i < jobs_.size(); ++i) {
      StreamJob& job = jobs_[i];
      job.result = &(*results)[i];
      for (int op = 0; op < StreamJob::kOps; ++op) {
        job.tags[op] = {&job, static_cast<StreamJob::Op>(op)};
      }
    }
  }

  void Run() {
    // Opening many channels takes a while: the answers of the first are
    // taken meanwhile.
    std::thread opener([this] {
      for (StreamJob& job : jobs_) Begin(job);
    });
    while (true) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (done_ == jobs_.size() && stops_in_flight_ == 0) break;
      }
      if (Cancelled(options_)) StopStreams();
      // XProf workers start together, once every worker has been reached.
      int64_t start = 0;
      if (!xprof_waiting_.empty() && gate_->Ready(&start)) {
        for (StreamJob* job : xprof_waiting_) StartProfile(*job, start);
        xprof_waiting_.clear();
      }
      void* tag = nullptr;
      bool ok = false;
      const auto got = cq_.AsyncNext(
          &tag, &ok,
          std::chrono::system_clock::now() + std::chrono::milliseconds(50));
      if (got == grpc::CompletionQueue::SHUTDOWN) break;
      if (got == grpc::CompletionQueue::TIMEOUT) continue;
      Handle(*static_cast<StreamJob::Tag*>(tag), ok);
    }
    opener.join();
    cq_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
    }
  }

 private:
  void Done() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
  }

  void Fail(StreamJob& job, const absl::Status& s) {
    job.result->ok = false;
    job.result->error = std::string(s.message());
    shared_->Finished(false);
    Release(job);
    Done();
  }

  // A worker that is done gives back its calls and its channel at once:
  // tearing down many channels at the end would be waited for.
  static void Release(StreamJob& job) {
    job.info_call.reset();
    job.reader.reset();
    job.profile_call.reset();
    job.generic.reset();
    job.stop_call.reset();
    job.terminate_call.reset();
    job.stop_ctx.reset();
    job.ctx.reset();
    job.file.reset();
    job.worker.reset();
  }

  // On the opening thread: the worker's channel and its GetInfo.
  void Begin(StreamJob& job) {
    auto started = StartInfo(job.result->address, options_.connect, &cq_);
    // What the queue's thread reads once the answer (or the alarm) is in.
    std::lock_guard<std::mutex> lock(handoff_);
    if (!started.ok()) {
      job.open_status = started.status();
      job.open_failed.Set(&cq_, gpr_now(GPR_CLOCK_MONOTONIC),
                          job.tag(StreamJob::kInfo));
      return;
    }
    job.worker = std::move(started->connection);
    job.ctx = std::move(started->ctx);
    job.info_call = std::move(started->call);
    job.info_call->Finish(&job.info, &job.info_status,
                          job.tag(StreamJob::kInfo));
  }

  // On the queue's thread: who the worker is; then its file and its
  // stream, and its first clock probe on the pool.
  void OnInfo(StreamJob& job) {
    WorkerResult* result = job.result;
    job.info_call.reset();
    job.ctx.reset();
    if (!job.open_status.ok()) {
      gate_->Arrive();
      return Fail(job, job.open_status);
    }
    const grpc::Status& s = job.info_status;
    // A server without Podscope's service may speak XProf's (its Profile
    // call says). XProf workers wait for every worker to be reached, to
    // start together; Podscope workers record as soon as they are asked.
    gate_->Arrive();
    if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      job.xprof = true;
      xprof_waiting_.push_back(&job);
      return;
    }
    if (!s.ok()) return Fail(job, job.worker->InfoError(s, options_.connect));
    WorkerConnection& worker = *job.worker;
    result->protocol = "podscope";
    result->producer = job.info.producer();
    result->alignment = "probes";
    result->host = job.info.host();
    result->pid = job.info.pid();
    if (Cancelled(options_)) {
      return Fail(job, absl::CancelledError(absl::StrCat(
                           result->address, ": cancelled before recording")));
    }
    absl::StatusOr<int> fd =
        shared_->CreateFile(job.info.host(), job.info.pid(), &result->path);
    if (!fd.ok()) {
      result->write_failed = true;
      return Fail(job, absl::Status(fd.status().code(),
                                    absl::StrCat(result->address, ": ",
                                                 fd.status().message())));
    }
    job.file = tf::StreamedFile::Adopt(*fd, result->path);
    job.recorded = options_.session.empty() ? "" : session_;
    // The stream lasts the capture plus the time to drain and close.
    job.ctx = std::make_unique<grpc::ClientContext>();
    worker.Prepare(job.ctx.get(), options_.duration_ms + 60'000);
    shared_->Streaming(+1);
    job.reader = worker.stub()->AsyncCapture(
        job.ctx.get(), BuildCaptureRequest(options_, session_), &cq_,
        job.tag(StreamJob::kStarted));
    pool_.Post([this, &job] { FirstProbe(job); });
  }

  // On the queue's thread: an XProf worker's Profile call, starting at the
  // common instant (ProfileOptions.start_timestamp_ns).
  void StartProfile(StreamJob& job, int64_t start_realtime_ns) {
    if (Cancelled(options_)) {
      job.result->protocol = "xprof";
      return Fail(job,
                  absl::CancelledError(absl::StrCat(
                      job.result->address, ": cancelled before recording")));
    }
    WorkerConnection& worker = *job.worker;
    const tensorflow::ProfileRequest request = StartXProfProfile(
        options_, session_, start_realtime_ns, worker, job.result);
    job.ctx = std::make_unique<grpc::ClientContext>();
    worker.Prepare(job.ctx.get(),
                   XProfCallTimeoutMs(options_, start_realtime_ns));
    shared_->Streaming(+1);
    grpc::ByteBuffer bytes;
    bool own = false;
    (void)grpc::SerializationTraits<tensorflow::ProfileRequest>::Serialize(
        request, &bytes, &own);
    job.generic = std::make_unique<grpc::GenericStub>(worker.channel());
    job.profile_sent_ns = MonotonicNs();
    job.profile_call = job.generic->PrepareUnaryCall(
        job.ctx.get(), "/tensorflow.ProfilerService/Profile", bytes, &cq_);
    job.profile_call->StartCall();
    job.profile_call->Finish(&job.profile_bytes, &job.profile_status,
                             job.tag(StreamJob::kProfiled));
  }

  // On a pool thread: the XSpace an XProf worker answered with, kept for
  // the alignment of every host (its file is written after it).
  void EndProfile(StreamJob& job) {
    const size_t i = static_cast<size_t>(&job - jobs_.data());
    tensorflow::ProfileResponse response;
    if (job.profile_status.ok() &&
        !grpc::SerializationTraits<tensorflow::ProfileResponse>::Deserialize(
             &job.profile_bytes, &response)
             .ok()) {
      return Fail(job, NotAProfileResponse(*job.worker));
    }
    absl::Status s =
        FinishXProfProfile(options_, *job.worker, job.profile_status, &response,
                           job.profile_sent_ns, job.profile_received_ns,
                           shared_, job.result, &(*xprof_)[i]);
    if (!s.ok()) return Fail(job, s);
    // Finished once its file is written, after the alignment.
    Release(job);
    Done();
  }

  // The stream or the Profile call is over (and no Stop is in flight).
  void StreamOver(StreamJob& job) {
    if (job.xprof) {
      pool_.Post([this, &job] { EndProfile(job); });
    } else {
      Arrive(job);
    }
  }

  // On a pool thread, once the worker records: its probe port and a first
  // clock probe (waiting for it first would start every worker later, and
  // the fit takes probes from the whole capture anyway).
  void FirstProbe(StreamJob& job) {
    WorkerConnection& worker = *job.worker;
    worker.LearnProbePort(job.info);
    auto first = worker.Probe(options_.clock_probes);
    {
      std::lock_guard<std::mutex> lock(job.probe_mutex);
      if (first.ok()) {
        job.probes = {*first};
      } else {
        job.probe_error = first.status();
      }
    }
    if (worker.lean_probes()) probes_.Add(&job);
    Arrive(job);
  }

  // The setup or the stream is over; the second ends the worker.
  void Arrive(StreamJob& job) {
    if (--job.pending == 0) pool_.Post([this, &job] { End(job); });
  }

  void Handle(const StreamJob::Tag& tag, bool ok) {
    StreamJob& job = *tag.job;
    {
      // Written by a pool thread before it handed the stream over.
      std::lock_guard<std::mutex> lock(handoff_);
    }
    switch (tag.op) {
      case StreamJob::kInfo:
        return OnInfo(job);
      case StreamJob::kStarted:
        if (!ok) {
          return job.reader->Finish(&job.outcome.status,
                                    job.tag(StreamJob::kFinish));
        }
        return job.reader->Read(&job.data, job.tag(StreamJob::kRead));
      case StreamJob::kRead:
        if (!ok) {
          return job.reader->Finish(&job.outcome.status,
                                    job.tag(StreamJob::kFinish));
        }
        OnData(job);
        return job.reader->Read(&job.data, job.tag(StreamJob::kRead));
      case StreamJob::kFinish:
      case StreamJob::kProfiled:
        if (tag.op == StreamJob::kProfiled) {
          job.profile_received_ns = MonotonicNs();
        }
        job.finishing = true;
        shared_->Streaming(-1);
        // A Stop in flight completes on this thread first.
        if (!job.stop_in_flight) StreamOver(job);
        return;
      case StreamJob::kStop:
        job.stop_in_flight = false;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          --stops_in_flight_;
        }
        if (job.finishing) StreamOver(job);
        return;
    }
  }

  // Writes a message of the stream into the worker's file.
  void OnData(StreamJob& job) {
    StreamOutcome& out = job.outcome;
    WorkerResult* result = job.result;
    if (out.file_status.ok()) {
      out.file_status = job.file->Append(job.data.records());
      // Nothing more can be kept: leave the capture (it goes on for the
      // worker's other clients).
      if (IsLocalWriteError(out.file_status)) job.ctx->TryCancel();
    }
    if (!job.data.session_id().empty()) job.recorded = job.data.session_id();
    shared_->Received(job.data.records().size(),
                      job.data.events() - result->events);
    result->events = job.data.events();
    result->dropped = job.data.dropped();
    if (job.data.done()) {
      out.done = true;
      out.receiver_indexes = job.data.receiver_indexes();
    }
  }

  // Cancelled: every streaming worker is asked to stop, again every 200 ms
  // (it may not have started recording yet) until its stream ends; its
  // file then ends complete, as when the duration runs out.
  void StopStreams() {
    const int64_t now = MonotonicNs();
    for (StreamJob& job : jobs_) {
      // Streams start, end and are released on this thread or after it
      // saw their end (`finishing`, never touched again here).
      if (job.finishing ||
          (job.reader == nullptr && job.profile_call == nullptr) ||
          job.stop_in_flight || now - job.stop_sent_ns < 200'000'000) {
        continue;
      }
      job.stop_in_flight = true;
      job.stop_sent_ns = now;
      job.stop_ctx = std::make_unique<grpc::ClientContext>();
      job.worker->Prepare(job.stop_ctx.get(), 2000);
      if (job.xprof) {
        // The Profile call then answers with what the server recorded.
        tensorflow::TerminateRequest terminate;
        terminate.set_session_id(session_);
        job.terminate_call = job.worker->xprof_stub()->AsyncTerminate(
            job.stop_ctx.get(), terminate, &cq_);
        job.terminate_call->Finish(&job.terminate_response, &job.stop_status,
                                   job.tag(StreamJob::kStop));
      } else {
        pb::StopRequest stop;
        stop.set_session_id(job.recorded);
        job.stop_call =
            job.worker->stub()->AsyncStop(job.stop_ctx.get(), stop, &cq_);
        job.stop_call->Finish(&job.stop_response, &job.stop_status,
                              job.tag(StreamJob::kStop));
      }
      std::lock_guard<std::mutex> lock(mutex_);
      ++stops_in_flight_;
    }
  }

  // On a pool thread, once the stream has ended: the clock after, the fit,
  // and the file's last records (durable before the manifest vouches for
  // it).
  void End(StreamJob& job) {
    WorkerConnection& worker = *job.worker;
    WorkerResult* result = job.result;
    if (worker.lean_probes()) probes_.Remove(&job);
    const StreamOutcome& outcome = job.outcome;
    tf::StreamedFile& file = *job.file;
    std::vector<ClockEstimate> probes;
    absl::Status probe_error;
    {
      std::lock_guard<std::mutex> lock(job.probe_mutex);
      probes = job.probes;
      for (const ClockEstimate& e : job.during) probes.push_back(e);
      probe_error = job.probe_error;
    }
    result->bytes = file.bytes_received();
    result->write_failed = IsLocalWriteError(outcome.file_status);
    absl::Status error = StreamError(worker, outcome, file, result->path);
    // The last measurement, when the worker is still there; then offset and
    // drift fitted to every probe (with gRPC probes, the two ends alone).
    if (outcome.status.ok()) {
      auto after = worker.Probe(options_.clock_probes);
      if (after.ok()) probes.push_back(*after);
    }
    // A worker whose clock could not be measured at all is not lined up.
    if (probes.empty() && !probe_error.ok() && error.ok()) error = probe_error;
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
      absl::Status added = file.bytes_written() > 0
                               ? file.AddRecord(tf::RecordType::kClock, clock)
                               : absl::OkStatus();
      absl::Status finished =
          file.Finish(/*build_index=*/error.ok() && outcome.receiver_indexes,
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
      (void)file.Finish(/*build_index=*/false);
    }
    if (!error.ok()) return Fail(job, error);
    result->ok = true;
    shared_->Finished(true);
    Release(job);
    Done();
  }

  const CaptureOptions& options_;
  const std::string& session_;
  CaptureShared* const shared_;
  StartGate* const gate_;
  std::vector<XProfHost>* const xprof_;
  std::vector<StreamJob> jobs_;
  grpc::CompletionQueue cq_;
  std::mutex handoff_;
  std::mutex mutex_;
  size_t done_ = 0;          // guarded by mutex_
  int stops_in_flight_ = 0;  // guarded by mutex_
  // XProf workers reached, waiting for every other (this thread only).
  std::vector<StreamJob*> xprof_waiting_;
  ThroughCaptureProbes probes_;
  // Last: its threads end (their tasks done) before anything above goes.
  WorkPool pool_;
};

}  // namespace

void CaptureWorkersStreaming(const CaptureOptions& options,
                             const std::string& session, CaptureShared* shared,
                             StartGate* gate,
                             std::vector<WorkerResult>* results,
                             std::vector<XProfHost>* xprof) {
  StreamFanout(options, session, shared, gate, results, xprof).Run();
}

}  // namespace podscope::profiler::internal
