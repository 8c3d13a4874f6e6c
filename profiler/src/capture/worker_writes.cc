// Worker-side captures of any number of Podscope workers from two threads:
// every call is asynchronous on one completion queue, so the client's
// threads do not grow with the pod. One thread opens the channels and
// sends GetInfo (which must report a capture root); the queue's thread
// meanwhile takes the answers and probes each worker's clock (on its UDP
// probe port, else through gRPC; the best kept). Once every worker has
// been reached or has failed, each is sent Capture with the common start
// on its own clock (or the window of steps), and progress is read until
// the worker names its file. A worker's calls and channel are released as
// soon as it is done. Failures are the worker's own: each result says
// what happened.
#include <grpcpp/alarm.h>
#include <poll.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/base/clock_fit.h"
#include "podscope/base/file_names.h"
#include "podscope/base/time.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/format.h"
#include "src/capture/clock_probes.h"
#include "src/capture/worker_capture.h"
#include "src/capture/worker_connection.h"

namespace podscope::profiler::internal {
namespace {

namespace pb = ::podscope::profiler::proto;

}  // namespace

absl::StatusOr<std::string> CheckedWorkerFileName(const std::string& session,
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

namespace {

enum class Op { kInfo, kProbe, kUdpProbed, kStarted, kRead, kFinish, kStop };
constexpr int kOps = 7;

struct Worker;
struct Tag {
  Worker* worker;
  Op op;
};

// One worker's calls, in flight one at a time (a Stop aside).
struct Worker {
  WorkerResult* result = nullptr;
  std::unique_ptr<WorkerConnection> connection;
  bool finished = false;  // done, successfully or not
  bool ready = false;     // reached and probed, waiting for the start
  bool capturing = false;
  bool stop_sent = false;

  std::unique_ptr<grpc::ClientContext> ctx;
  grpc::Status status;
  pb::ProcessInfo info;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::ProcessInfo>> info_call;

  int probes_left = 0;
  base::ProbeTimes probe;
  pb::ClockProbeResponse probe_response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::ClockProbeResponse>>
      probe_call;
  std::optional<ClockEstimate> best;

  pb::CaptureData data;
  std::optional<pb::WorkerFile> file;
  std::unique_ptr<grpc::ClientAsyncReader<pb::CaptureData>> capture_call;

  // A channel that could not be opened: the opening thread says so
  // through the queue (kInfo, by the alarm).
  absl::Status open_status;
  grpc::Alarm open_failed;
  // The probe thread's answer (kUdpProbed, by the alarm): the best probe
  // on the worker's UDP port, if any was answered, and those discarded.
  std::optional<ClockEstimate> udp_best;
  int64_t udp_discarded = 0;
  grpc::Alarm udp_probed;

  std::unique_ptr<grpc::ClientContext> stop_ctx;
  pb::StopResponse stop_response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::StopResponse>> stop_call;
  grpc::Status stop_status;

  Tag tags[kOps];
  void* tag(Op op) { return &tags[static_cast<int>(op)]; }
};

// Probes workers' UDP clock probe ports, up to kInFlight workers at once
// from one thread, each worker's probes one after another: a pod's workers
// are probed in a fraction of the time one at a time would take, and each
// probe still waits behind no other probe of its worker. A port that does
// not answer its first probe within 20 ms (a firewall) leaves the gRPC
// probes. Each worker done is handed back through the completion queue.
class UdpProbes {
 public:
  // `handoff` is held while a worker's results are handed to the queue's
  // thread (which takes it before it reads them).
  UdpProbes(grpc::CompletionQueue* cq, std::mutex* handoff, int probes)
      : cq_(cq),
        handoff_(handoff),
        probes_(probes),
        thread_([this] { Loop(); }) {}
  ~UdpProbes() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Add(Worker* w, std::string host, int port, std::string key) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back({w, std::move(host), port, std::move(key)});
    }
    cv_.notify_all();
  }

 private:
  static constexpr size_t kInFlight = 8;
  static constexpr int64_t kTimeoutNs = 20'000'000;
  struct Job {
    Worker* worker;
    std::string host;
    int port;
    std::string key;
  };
  struct Flight {
    Worker* worker;
    std::unique_ptr<UdpProber> prober;
    int sent = 0;
    int answered = 0;
    int64_t sent_at = 0;
  };

  void Loop() {
    std::vector<Flight> flying;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (flying.empty()) {
          cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
          if (closing_ && queue_.empty()) return;
        }
        while (flying.size() < kInFlight && !queue_.empty()) {
          Job job = std::move(queue_.front());
          queue_.pop_front();
          lock.unlock();
          auto prober = UdpProber::Connect(job.host, job.port, job.key);
          if (!prober.ok()) {
            Done(job.worker, nullptr);
          } else {
            flying.push_back({job.worker, *std::move(prober)});
            SendNext(flying.back());
          }
          lock.lock();
        }
      }
      Wait(&flying);
    }
  }

  void SendNext(Flight& f) {
    ++f.sent;
    f.sent_at = f.prober->Send();
  }

  // Waits for answers (or the oldest probe's timeout), and moves every
  // flight on.
  void Wait(std::vector<Flight>* flying) {
    if (flying->empty()) return;
    std::vector<pollfd> fds;
    int64_t first_give_up = INT64_MAX;
    for (const Flight& f : *flying) {
      fds.push_back({f.prober->fd(), POLLIN, 0});
      first_give_up = std::min(first_give_up, f.sent_at + kTimeoutNs);
    }
    const int64_t wait_ns = std::max<int64_t>(0, first_give_up - MonotonicNs());
    timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
                static_cast<long>(wait_ns % 1'000'000'000)};
    (void)ppoll(fds.data(), fds.size(), &ts, nullptr);
    const int64_t now = MonotonicNs();
    for (size_t i = 0; i < flying->size();) {
      Flight& f = (*flying)[i];
      bool moved_on = false;
      if (f.sent_at != 0) {
        if (auto t = f.prober->Receive(f.sent_at, /*profiler_clock=*/false)) {
          ++f.answered;
          std::optional<ClockEstimate> e = f.prober->Estimate(*t);
          Worker& w = *f.worker;
          if (e &&
              (!w.udp_best || e->uncertainty_ns < w.udp_best->uncertainty_ns)) {
            w.udp_best = e;
          }
          moved_on = true;
        }
      }
      if (!moved_on && (f.sent_at == 0 || now >= f.sent_at + kTimeoutNs)) {
        // Unanswered: a port that never answered is given up at once.
        if (f.answered == 0 && f.prober->discarded() == 0) f.sent = probes_;
        moved_on = true;
      }
      if (moved_on && f.sent >= probes_) {
        Done(f.worker, f.prober.get());
        flying->erase(flying->begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (moved_on) SendNext(f);
      ++i;
    }
  }

  void Done(Worker* w, const UdpProber* prober) {
    std::lock_guard<std::mutex> lock(*handoff_);
    if (prober != nullptr) w->udp_discarded = prober->discarded();
    w->udp_probed.Set(cq_, gpr_now(GPR_CLOCK_MONOTONIC),
                      w->tag(Op::kUdpProbed));
  }

  grpc::CompletionQueue* const cq_;
  std::mutex* const handoff_;
  const int probes_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // guarded by mutex_
  bool closing_ = false;   // guarded by mutex_
  std::thread thread_;
};

class Fanout {
 public:
  Fanout(const CaptureOptions& options, const std::string& session,
         CaptureShared* shared, std::vector<WorkerResult>* results)
      : options_(options), session_(session), shared_(shared) {
    workers_.resize(results->size());
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      w.result = &(*results)[i];
      for (int op = 0; op < kOps; ++op) {
        w.tags[op] = {&w, static_cast<Op>(op)};
      }
    }
  }

  void Run() {
    t0_ = MonotonicNs();
    // Opening hundreds of channels takes a while: the answers of the first
    // are taken (and their clocks probed) meanwhile.
    std::thread opener([this] {
      for (Worker& w : workers_) Begin(w);
    });
    while (done_ < workers_.size()) {
      if (ready_ + done_ == workers_.size() && !started_) StartAll();
      if (Cancelled(options_)) StopAll();
      void* tag = nullptr;
      bool ok = false;
      const auto wait =
          std::chrono::system_clock::now() + std::chrono::milliseconds(50);
      const auto got = cq_.AsyncNext(&tag, &ok, wait);
      if (got == grpc::CompletionQueue::SHUTDOWN) break;
      if (got == grpc::CompletionQueue::TIMEOUT) continue;
      Handle(*static_cast<Tag*>(tag), ok);
    }
    opener.join();
    // Stops still in flight are waited for: their buffers are the workers'.
    while (stops_in_flight_ > 0) {
      void* tag = nullptr;
      bool ok = false;
      if (!cq_.Next(&tag, &ok)) break;
      if (static_cast<Tag*>(tag)->op == Op::kStop) --stops_in_flight_;
    }
    cq_.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) {
    }
  }

 private:
  void Fail(Worker& w, const std::string& why) {
    if (w.finished) return;
    w.finished = true;
    if (w.ready) --ready_;
    w.ready = false;
    w.result->ok = false;
    w.result->error = absl::StrCat(w.result->address, ": ", why);
    ++done_;
    shared_->Finished(false);
    Release(w);
  }

  // A worker that is done gives back its calls and its channel at once:
  // tearing down hundreds of channels at the end would be waited for.
  // A Stop still in flight keeps them until it completes.
  void Release(Worker& w) {
    if (w.stop_sent && w.stop_call != nullptr) return;
    w.info_call.reset();
    w.probe_call.reset();
    w.capture_call.reset();
    w.ctx.reset();
    w.connection.reset();
  }
  void Fail(Worker& w, const absl::Status& s) {
    // WorkerConnection's statuses name the worker already.
    std::string why(s.message());
    const std::string prefix = w.result->address + ": ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    Fail(w, why);
  }

  // On the opening thread: only this worker's channel and first call.
  void Begin(Worker& w) {
    auto started = StartInfo(w.result->address, options_.connect, &cq_);
    // What the queue's thread reads once the answer (or the alarm) is in.
    std::lock_guard<std::mutex> lock(handoff_);
    if (!started.ok()) {
      w.open_status = started.status();
      w.open_failed.Set(&cq_, gpr_now(GPR_CLOCK_MONOTONIC), w.tag(Op::kInfo));
      return;
    }
    w.connection = std::move(started->connection);
    w.ctx = std::move(started->ctx);
    w.info_call = std::move(started->call);
    w.info_call->Finish(&w.info, &w.status, w.tag(Op::kInfo));
  }

  void OnInfo(Worker& w) {
    w.result->written_by_worker = true;
    if (!w.open_status.ok()) return Fail(w, w.open_status);
    if (w.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
      return Fail(w,
                  "it does not serve Podscope's profiler (an XProf "
                  "server?): worker-side capture needs Podscope's");
    }
    if (!w.status.ok()) {
      return Fail(w, w.connection->InfoError(w.status, options_.connect));
    }
    w.result->protocol = "podscope";
    w.result->producer = w.info.producer();
    w.result->host = w.info.host();
    w.result->pid = w.info.pid();
    w.result->alignment = "probes";
    if (!w.info.worker_writes()) {
      return Fail(w,
                  "this worker has no capture root for worker-side captures "
                  "(PODSCOPE_CAPTURE_ROOT)");
    }
    // A rank of this process's job: its clock is the job's already.
    if (options_.start_on_job_clock) {
      w.result->alignment = "job clock";
      w.ready = true;
      ++ready_;
      return;
    }
    if (w.info.probe_port() > 0) {
      return udp_probes_.Add(&w, HostOfAddress(w.result->address),
                             w.info.probe_port(), w.info.probe_key());
    }
    ProbeThroughGrpc(w);
  }

  // A few: every worker is probed at once, and the file's alignment
  // states the uncertainty of the best.
  void ProbeThroughGrpc(Worker& w) {
    w.probes_left = std::clamp(options_.clock_probes, 1, 4);
    SendProbe(w);
  }

  void OnUdpProbed(Worker& w) {
    w.result->clock_probes_discarded += w.udp_discarded;
    if (!w.udp_best) return ProbeThroughGrpc(w);
    w.best = w.udp_best;
    Ready(w);
  }

  void Ready(Worker& w) {
    w.result->clock = {*w.best};
    w.result->clock_probes = 1;
    w.result->alignment_uncertainty_ns = w.best->uncertainty_ns;
    w.result->alignment_relative_uncertainty_ns = w.best->uncertainty_ns;
    w.ready = true;
    ++ready_;
  }

  void SendProbe(Worker& w) {
    w.ctx = std::make_unique<grpc::ClientContext>();
    w.connection->Prepare(w.ctx.get(), 2000);
    pb::ClockProbeRequest request;
    w.probe = {};
    w.probe.t1 = MonotonicNs();
    request.set_client_send_ns(w.probe.t1);
    w.probe_call =
        w.connection->stub()->AsyncProbeClock(w.ctx.get(), request, &cq_);
    w.probe_call->Finish(&w.probe_response, &w.status, w.tag(Op::kProbe));
  }

  void OnProbe(Worker& w) {
    w.probe.t4 = MonotonicNs();
    if (w.status.ok()) {
      w.probe.t2 = w.probe_response.server_receive_ns();
      w.probe.t3 = w.probe_response.server_send_ns();
      if (base::CheckProbe(w.probe) == base::ProbeFault::kNone) {
        const ClockEstimate e = EstimateOf(base::SamplePeerLocal(w.probe));
        if (!w.best || e.uncertainty_ns < w.best->uncertainty_ns) w.best = e;
      } else {
        ++w.result->clock_probes_discarded;
      }
    }
    if (--w.probes_left > 0) return SendProbe(w);
    if (!w.best) {
      return Fail(w, w.status.ok()
                         ? absl::UnavailableError(
                               "no clock probe had timestamps that can be "
                               "trusted")
                         : w.connection->Error("ProbeClock", w.status));
    }
    Ready(w);
  }

  // The common start on this side's clock: start_lead_ms after the
  // capture began, the time it has to reach every worker. When reaching
  // took longer, the start leaves as much time again to send every worker
  // its Capture: each worker then opens its file and arms its start, work
  // of the same order as answering GetInfo and the clock probes, so
  // workers that were slow to reach (a loaded host, many workers sharing
  // one) are slow to arm too, and a start sooner would find some of them
  // not ready and start them late. At least a margin for the calls
  // themselves, growing with their number.
  static constexpr int64_t kSendNsPerWorker = 300'000;
  int64_t CommonStart(int64_t now) const {
    const int64_t send_ns = std::max<int64_t>(
        20'000'000 + static_cast<int64_t>(ready_) * kSendNsPerWorker,
        now - t0_);
    return std::max(t0_ + options_.start_lead_ms * 1'000'000, now + send_ns);
  }

  // Every worker reached or failed: the common start, on this side's
  // clock, then each worker's.
  void StartAll() {
    started_ = true;
    const int64_t now = MonotonicNs();
    const int64_t start = CommonStart(now);
    // The same instant on the job's clock (this process's profiler clock).
    const int64_t job_start = ProfilerNowNs() + (start - now);
    for (Worker& w : workers_) {
      if (!w.ready || w.finished) continue;
      w.ready = false;
      --ready_;
      if (Cancelled(options_)) {
        Fail(w, "cancelled before recording");
        continue;
      }
      pb::CaptureRequest request = BuildCaptureRequest(options_, session_);
      request.set_worker_writes(true);
      request.set_join_any_session(false);
      if (options_.start_on_job_clock) {
        if (!options_.by_steps) {
          w.result->start_at_ns = job_start;
          request.set_start_at_job_ns(job_start);
        }
      } else {
        if (!options_.by_steps) {
          w.result->start_at_ns = start - w.best->offset_ns;
          request.set_start_at_ns(w.result->start_at_ns);
        }
        trace_format::proto::ClockOffset* o = request.add_clock_offsets();
        o->set_local_monotonic_ns(w.best->local_ns);
        o->set_offset_ns(w.best->offset_ns);
        o->set_uncertainty_ns(w.best->uncertainty_ns);
        o->set_reference("capture client");
      }
      w.ctx = std::make_unique<grpc::ClientContext>();
      w.connection->Prepare(
          w.ctx.get(), options_.start_lead_ms + options_.duration_ms + 60'000);
      w.capturing = true;
      shared_->Streaming(+1);
      w.capture_call = w.connection->stub()->AsyncCapture(
          w.ctx.get(), request, &cq_, w.tag(Op::kStarted));
    }
  }

  void OnData(Worker& w) {
    WorkerResult& r = *w.result;
    // Progress only: the worker's counts, never more than it says.
    // What arrived here: the messages, not the file.
    r.received_bytes += w.data.ByteSizeLong();
    shared_->Received(w.data.ByteSizeLong(), w.data.events() > r.events
                                                 ? w.data.events() - r.events
                                                 : 0);
    r.events = std::max<uint64_t>(r.events, w.data.events());
    r.dropped = w.data.dropped();
    r.bytes = w.data.file_bytes();
    if (w.data.done() && w.data.has_file()) w.file = w.data.file();
  }

  void OnFinish(Worker& w) {
    w.capturing = false;
    shared_->Streaming(-1);
    WorkerResult& r = *w.result;
    if (w.file) {
      r.bytes = w.file->bytes();
      r.crc32 = w.file->crc32();
      r.window_start_ns = w.file->window_start_ns();
      r.window_end_ns = w.file->window_end_ns();
      r.job_clock = w.file->job_clock();
      if (r.job_clock) r.alignment = "job clock";
      absl::StatusOr<std::string> name =
          CheckedWorkerFileName(session_, w.file->path());
      if (!name.ok()) return Fail(w, std::string(name.status().message()));
      // Relayed (no folder here): the name under the worker's root.
      r.path = options_.logdir.empty()
                   ? absl::StrCat(session_, "/", *name)
                   : absl::StrCat(options_.logdir, "/", session_, "/", *name);
    }
    if (!w.status.ok()) {
      return Fail(
          w, absl::StrCat(
                 "the worker-side capture failed: ", w.status.error_message(),
                 w.file ? " (its file holds what it recorded)" : ""));
    }
    if (!w.file) return Fail(w, "the worker ended without naming its file");
    // When this side shares the folder, the file is there and whole.
    if (!options_.logdir.empty()) {
      absl::Status whole = LookForWorkerFile(r.path, r.bytes, &r.file_seen);
      if (!whole.ok()) return Fail(w, std::string(whole.message()));
    }
    w.finished = true;
    r.ok = true;
    Release(w);
    ++done_;
    shared_->Finished(true);
  }

  void Handle(const Tag& tag, bool ok) {
    Worker& w = *tag.worker;
    if (tag.op == Op::kInfo || tag.op == Op::kUdpProbed) {
      // Written by another thread before it handed the tag over.
      std::lock_guard<std::mutex> lock(handoff_);
    }
    switch (tag.op) {
      case Op::kInfo:
        return OnInfo(w);
      case Op::kProbe:
        return OnProbe(w);
      case Op::kUdpProbed:
        return OnUdpProbed(w);
      case Op::kStarted:
        if (!ok) {
          return w.capture_call->Finish(&w.status, w.tag(Op::kFinish));
        }
        return w.capture_call->Read(&w.data, w.tag(Op::kRead));
      case Op::kRead:
        if (!ok) return w.capture_call->Finish(&w.status, w.tag(Op::kFinish));
        OnData(w);
        // The last message (the worker sends it with the call's status):
        // the status next, with no read of the stream's end first.
        if (w.data.done()) {
          return w.capture_call->Finish(&w.status, w.tag(Op::kFinish));
        }
        return w.capture_call->Read(&w.data, w.tag(Op::kRead));
      case Op::kFinish:
        return OnFinish(w);
      case Op::kStop:
        --stops_in_flight_;
        w.stop_call.reset();
        w.stop_ctx.reset();
        if (w.finished) Release(w);
        return;
    }
  }

  // Cancelled: every recording worker is asked to stop, once; its file
  // then ends complete, as when the duration runs out.
  void StopAll() {
    for (Worker& w : workers_) {
      if (!w.capturing || w.stop_sent) continue;
      w.stop_sent = true;
      w.stop_ctx = std::make_unique<grpc::ClientContext>();
      w.connection->Prepare(w.stop_ctx.get(), 2000);
      pb::StopRequest stop;
      stop.set_session_id(session_);
      w.stop_call =
          w.connection->stub()->AsyncStop(w.stop_ctx.get(), stop, &cq_);
      w.stop_call->Finish(&w.stop_response, &w.stop_status, w.tag(Op::kStop));
      ++stops_in_flight_;
    }
  }

  const CaptureOptions& options_;
  const std::string& session_;
  CaptureShared* const shared_;
  std::vector<Worker> workers_;
  grpc::CompletionQueue cq_;
  std::mutex handoff_;
  UdpProbes udp_probes_{&cq_, &handoff_,
                        std::clamp(options_.clock_probes, 1, 4)};
  int64_t t0_ = 0;  // when Run began
  size_t done_ = 0;
  size_t ready_ = 0;
  bool started_ = false;
  int stops_in_flight_ = 0;
};

}  // namespace

void CaptureWorkersWriting(const CaptureOptions& options,
                           const std::string& session, CaptureShared* shared,
                           std::vector<WorkerResult>* results) {
  Fanout(options, session, shared, results).Run();
}

}  // namespace podscope::profiler::internal
