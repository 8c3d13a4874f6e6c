// Worker-side captures of any number of Podscope workers from one thread:
// every call is asynchronous on one completion queue, so the client's
// threads do not grow with the pod. Per worker: GetInfo (which must report
// a capture root), a few clock probes (on its UDP probe port, else through
// gRPC; the best kept), then,
// once every worker has been reached or has failed, Capture with the
// common start on that worker's clock (or the window of steps), reading
// progress until the worker names its file. Failures are the worker's
// own: each result says what happened.
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

enum class Op { kInfo, kProbe, kStarted, kRead, kFinish, kStop };

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

  std::unique_ptr<grpc::ClientContext> stop_ctx;
  pb::StopResponse stop_response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<pb::StopResponse>> stop_call;
  grpc::Status stop_status;

  Tag tags[6];
  void* tag(Op op) { return &tags[static_cast<int>(op)]; }
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
      for (int op = 0; op < 6; ++op) w.tags[op] = {&w, static_cast<Op>(op)};
    }
  }

  void Run() {
    for (Worker& w : workers_) Begin(w);
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
  }
  void Fail(Worker& w, const absl::Status& s) {
    // WorkerConnection's statuses name the worker already.
    std::string why(s.message());
    const std::string prefix = w.result->address + ": ";
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    Fail(w, why);
  }

  void Begin(Worker& w) {
    w.result->written_by_worker = true;
    auto connection =
        WorkerConnection::Open(w.result->address, options_.connect);
    if (!connection.ok()) return Fail(w, connection.status());
    w.connection = *std::move(connection);
    w.ctx = std::make_unique<grpc::ClientContext>();
    w.connection->Prepare(w.ctx.get(), options_.connect.connect_timeout_ms);
    w.ctx->set_wait_for_ready(true);
    w.info_call = w.connection->stub()->AsyncGetInfo(
        w.ctx.get(), pb::GetInfoRequest(), &cq_);
    w.info_call->Finish(&w.info, &w.status, w.tag(Op::kInfo));
  }

  void OnInfo(Worker& w) {
    if (!w.status.ok()) {
      if (w.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
          w.status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        return Fail(w, WorkerConnection::Unreachable(w.result->address,
                                                     options_.connect));
      }
      if (w.status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
        return Fail(w,
                    "it does not serve Podscope's profiler (an XProf "
                    "server?): worker-side capture needs Podscope's");
      }
      return Fail(w, w.connection->Error("GetInfo", w.status));
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
    if (ProbeThroughUdp(w)) return Ready(w);
    // A few: every worker is probed at once, and the file's alignment
    // states the uncertainty of the best.
    w.probes_left = std::clamp(options_.clock_probes, 1, 4);
    SendProbe(w);
  }

  // The worker's UDP probe port, one worker at a time from this thread so
  // that no probe waits behind another's: tight round trips, 4 of them
  // per worker (each a wake-up of the worker's probe thread). A port that does
  // not answer its first probe within 20 ms (a firewall) leaves the gRPC
  // probes.
  bool ProbeThroughUdp(Worker& w) {
    if (w.info.probe_port() <= 0) return false;
    auto udp = UdpProber::Connect(HostOfAddress(w.result->address),
                                  w.info.probe_port(), w.info.probe_key());
    if (!udp.ok()) return false;
    const int probes = std::clamp(options_.clock_probes, 1, 4);
    for (int i = 0; i < probes; ++i) {
      std::optional<ClockEstimate> e = (*udp)->ProbeOnce(20);
      if (!e) {
        if (i == 0 && (*udp)->discarded() == 0) break;
        continue;
      }
      if (!w.best || e->uncertainty_ns < w.best->uncertainty_ns) w.best = e;
    }
    w.result->clock_probes_discarded += (*udp)->discarded();
    return w.best.has_value();
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

  // Every worker reached or failed: the common start, on this side's
  // clock, then each worker's.
  void StartAll() {
    started_ = true;
    const int64_t start = MonotonicNs() + options_.start_lead_ms * 1'000'000;
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
      if (!options_.by_steps) {
        w.result->start_at_ns = start - w.best->offset_ns;
        request.set_start_at_ns(w.result->start_at_ns);
      }
      trace_format::proto::ClockOffset* o = request.add_clock_offsets();
      o->set_local_monotonic_ns(w.best->local_ns);
      o->set_offset_ns(w.best->offset_ns);
      o->set_uncertainty_ns(w.best->uncertainty_ns);
      o->set_reference("capture client");
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
          CheckedFileName(session_, w.file->path());
      if (!name.ok()) return Fail(w, std::string(name.status().message()));
      r.path = absl::StrCat(options_.logdir, "/", session_, "/", *name);
    }
    if (!w.status.ok()) {
      return Fail(
          w, absl::StrCat(
                 "the worker-side capture failed: ", w.status.error_message(),
                 w.file ? " (its file holds what it recorded)" : ""));
    }
    if (!w.file) return Fail(w, "the worker ended without naming its file");
    // When this side shares the folder, the file is there and whole.
    struct stat st;
    if (::stat(r.path.c_str(), &st) == 0) {
      if (static_cast<uint64_t>(st.st_size) != r.bytes) {
        return Fail(w, absl::StrCat(r.path, " has ", st.st_size,
                                    " bytes; the worker wrote ", r.bytes));
      }
      r.file_seen = true;
    }
    w.finished = true;
    r.ok = true;
    ++done_;
    shared_->Finished(true);
  }

  void Handle(const Tag& tag, bool ok) {
    Worker& w = *tag.worker;
    switch (tag.op) {
      case Op::kInfo:
        return OnInfo(w);
      case Op::kProbe:
        return OnProbe(w);
      case Op::kStarted:
        if (!ok) {
          return w.capture_call->Finish(&w.status, w.tag(Op::kFinish));
        }
        return w.capture_call->Read(&w.data, w.tag(Op::kRead));
      case Op::kRead:
        if (!ok) return w.capture_call->Finish(&w.status, w.tag(Op::kFinish));
        OnData(w);
        return w.capture_call->Read(&w.data, w.tag(Op::kRead));
      case Op::kFinish:
        return OnFinish(w);
      case Op::kStop:
        --stops_in_flight_;
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
