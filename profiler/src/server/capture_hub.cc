#include "src/server/capture_hub.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/record_io.h"
#include "src/server/capture_request.h"
#include "src/session_internal.h"

namespace podscope::profiler::internal {
namespace {

namespace tf = ::podscope::trace_format;

class StreamSink : public trace_format::RecordSink {
 public:
  explicit StreamSink(std::shared_ptr<CaptureStream> stream)
      : stream_(std::move(stream)) {}
  absl::Status Append(std::string_view bytes) override {
    pending_.append(bytes);
    return absl::OkStatus();
  }
  absl::Status Flush(bool) override {
    if (!pending_.empty()) {
      stream_->Append(pending_);
      pending_.clear();
    }
    return absl::OkStatus();
  }
  absl::Status Close() override { return Flush(false); }

 private:
  std::shared_ptr<CaptureStream> stream_;
  std::string pending_;
};

std::atomic<uint64_t> g_next_owner{1};

// CLOCK_MONOTONIC when the profiler clock (ProfilerNowNs) reads `t`: the
// test skew inverted, one correction step for its drift.
int64_t MonotonicAtProfilerNs(int64_t t) {
  const ClockSkew& skew = TestClockSkew();
  if (!skew.active()) return t;
  const int64_t m0 = t - (skew.Apply(MonotonicNs()) - MonotonicNs());
  return m0 + (t - skew.Apply(m0));
}

constexpr int64_t kMaxStartAheadNs = int64_t{60} * 1'000'000'000;

// The tick count at CLOCK_MONOTONIC `ns` (an instant near now).
uint64_t TicksAtMonotonic(int64_t ns) {
  const TickCalibration cal = ProcessTickCalibration();
  const int64_t ahead = ns - MonotonicNs();
  return Ticks() + static_cast<uint64_t>(static_cast<int64_t>(
                       static_cast<double>(ahead) / cal.ns_per_tick));
}

// A scheduled window of the process's own session ends at the capture's
// deadline exactly (a source records on its own until it is stopped).
void PlanWindowEnd(Capture& c, bool source) {
  if (c.window == nullptr || c.window->by_steps() || source) return;
  c.window->PlanEnd(TicksAtMonotonic(c.deadline_ns), c.deadline_ns);
}

// The window a request asks for, and when it starts on CLOCK_MONOTONIC
// (now when at once, or for steps, which start when the program says).
absl::StatusOr<std::shared_ptr<CaptureWindow>> WindowFor(
    const pb::CaptureRequest& r, int64_t now, int64_t* start_ns) {
  *start_ns = now;
  if (r.by_steps()) return CaptureWindow::Steps(r.first_step(), r.last_step());
  int64_t at = r.start_at_ns();
  if (r.start_at_job_ns() != 0) {
    const std::optional<ReferenceClockOffset> job =
        LatestReferenceClockOffset();
    if (!job) {
      return absl::FailedPreconditionError(
          "start_at_job_ns: this process has no job clock (it is not a rank "
          "of a job, or its first heartbeat has not been answered)");
    }
    at = r.start_at_job_ns() - job->offset_ns;
  }
  if (at == 0) return nullptr;
  const int64_t mono = MonotonicAtProfilerNs(at);
  if (mono - now > kMaxStartAheadNs) {
    return absl::InvalidArgumentError(
        absl::StrCat("the start is ", (mono - now) / 1'000'000,
                     " ms ahead on this worker's clock; at most 60 s"));
  }
  // A start already past (a slow network) is now: the files then begin a
  // little apart, which their windows show.
  *start_ns = std::max(mono, now);
  // The instant in ticks, so that the window's edge is exact rather than
  // when a thread wakes.
  return CaptureWindow::At(TicksAtMonotonic(*start_ns), *start_ns);
}

}  // namespace

absl::Status ByteBudget::Holding::Take(int64_t bytes) {
  std::lock_guard<std::mutex> lock(budget_->mutex_);
  if (bytes > budget_->limit_ - budget_->held_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the answers in progress would hold ", budget_->held_ + bytes,
        " bytes of captures, over this server's ", budget_->name_, " of ",
        budget_->limit_, " bytes for all of them; retry when they are done"));
  }
  budget_->held_ += bytes;
  held_ += bytes;
  return absl::OkStatus();
}

void ByteBudget::Holding::Release() {
  std::lock_guard<std::mutex> lock(budget_->mutex_);
  budget_->held_ -= held_;
  held_ = 0;
}

CaptureHub::CaptureHub(const ServerOptions& options)
    : options_(options), controller_([this] { ControlLoop(); }) {}

CaptureHub::~CaptureHub() {
  StopAll();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  cv_.notify_all();
  controller_.join();
}

void CaptureHub::ControlLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [&] {
      return closing_ || (current_ != nullptr && !current_->controlled);
    });
    if (current_ == nullptr || current_->controlled) return;  // closing
    std::shared_ptr<Capture> c = current_;
    c->controlled = true;
    lock.unlock();
    Control(std::move(c));
    lock.lock();
  }
}

absl::StatusOr<std::shared_ptr<Capture>> CaptureHub::Join(
    const pb::CaptureRequest& r, const std::string& peer) {
  if (absl::Status s = ValidateCaptureRequest(r, options_); !s.ok()) return s;
  const int64_t now = MonotonicNs();
  const int64_t want_ns =
      (r.duration_ms() == 0 ? options_.max_duration_ms : r.duration_ms()) *
      1'000'000;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!current_) return StartLocked(r, peer, now, now + want_ns);
    Capture& c = *current_;
    if (!c.finished && !c.ending && !c.stop) {
      return JoinRunningLocked(r, now + want_ns);
    }
    if (!c.finished) {
      // A capture that is ending would give this request the end of its
      // own trace, at its own level: wait for it, then look again.
      cv_.wait(lock, [&] { return current_.get() != &c || c.finished; });
      continue;
    }
    ForgetFinishedLocked(lock);
  }
}

absl::StatusOr<std::shared_ptr<Capture>> CaptureHub::JoinRunningLocked(
    const pb::CaptureRequest& r, int64_t deadline_ns) {
  Capture& c = *current_;
  const std::string& wanted = r.session_id();
  const bool own_window =
      r.by_steps() || r.start_at_ns() != 0 || r.start_at_job_ns() != 0;
  if (r.worker_writes() != c.worker_writes ||
      ((r.worker_writes() || own_window) && wanted != c.session_id)) {
    // A second client of a worker-side capture of the same session gets
    // the same file; anything else would need a session of its own.
    return absl::FailedPreconditionError(
        absl::StrCat("a ", c.worker_writes ? "worker-side" : "streamed",
                     " capture (session '", c.session_id, "') is running; a ",
                     r.worker_writes() ? "worker-side" : "streamed",
                     own_window ? " capture with its own start" : " capture",
                     " cannot share it"));
  }
  if (!wanted.empty() && wanted != c.session_id && !r.join_any_session()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a capture for session '", c.session_id,
        "' is running; ask for that session (or none) to share it"));
  }
  if (c.clients >= options_.max_clients) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the running capture already has ", c.clients,
                     " clients (the limit is ", options_.max_clients, ")"));
  }
  if (c.stream->overflow()) {
    return absl::UnavailableError(
        "the running capture has outgrown the bytes kept for late "
        "clients; retry when it ends");
  }
  c.clients += 1;
  c.deadline_ns = std::min(std::max(c.deadline_ns, deadline_ns),
                           c.started_ns + options_.max_duration_ms * 1'000'000);
  PlanWindowEnd(c, options_.capture_source != nullptr);
  cv_.notify_all();
  return current_;
}

absl::StatusOr<std::shared_ptr<Capture>> CaptureHub::StartLocked(
    const pb::CaptureRequest& r, const std::string& peer, int64_t now,
    int64_t deadline_ns) {
  const std::string& wanted = r.session_id();
  auto capture = std::make_shared<Capture>();
  capture->session_id =
      wanted.empty() ? UtcSessionId(/*with_millis=*/true) : wanted;
  capture->owner = g_next_owner.fetch_add(1);
  capture->stream = std::make_shared<CaptureStream>(options_.max_capture_bytes);
  capture->started_ns = now;
  capture->clients = 1;
  int64_t start_ns = now;
  PODSCOPE_ASSIGN_OR_RETURN(capture->window, WindowFor(r, now, &start_ns));
  CaptureSource* const source = options_.capture_source.get();
  if (source != nullptr && r.by_steps()) {
    return absl::InvalidArgumentError(
        "this server's captures record a source without steps; ask for a "
        "duration or a start time instead");
  }
  capture->deadline_ns = deadline_ns + (start_ns - now);
  CaptureExtras extras;
  extras.window = capture->window;
  capture->worker_writes = r.worker_writes();
  if (capture->worker_writes) capture->stream->TellProgress();
  // Makes the sink: the capture's stream, or the worker's own file.
  std::string file_path;
  auto make_sink = [&]() -> absl::StatusOr<std::unique_ptr<tf::RecordSink>> {
    if (!capture->worker_writes) {
      return std::unique_ptr<tf::RecordSink>(
          std::make_unique<StreamSink>(capture->stream));
    }
    PODSCOPE_ASSIGN_OR_RETURN(
        WorkerFile f,
        CreateWorkerFile(
            options_.capture_root, capture->session_id,
            absl::StrCat(options_.host_name.empty() ? HostNameForFiles()
                                                    : options_.host_name,
                         ".", getpid())));
    capture->file_state = f.state;
    capture->file_dir = f.dir;
    file_path = f.relative_path;
    return std::move(f.sink);
  };
  if (capture->worker_writes) {
    // The file lines up with the job's other files by the job's clock
    // when the process has one, else by the client's probes.
    extras.job_clock_offsets = LatestReferenceClockOffset().has_value();
    if (!extras.job_clock_offsets) {
      extras.clock_offsets.assign(r.clock_offsets().begin(),
                                  r.clock_offsets().end());
    }
  }
  capture->file.set_job_clock(extras.job_clock_offsets);
  TraceOptions o = CaptureTraceOptions(r);
  o.session_id = capture->session_id;
  PODSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<tf::RecordSink> sink, make_sink());
  absl::Status s;
  if (source != nullptr) {
    s = source->Start(std::move(sink), capture->session_id, start_ns);
  } else {
    s = internal::StartOwnedSession(
        std::move(sink), o,
        absl::StrCat("remote capture '", capture->session_id, "' for ", peer),
        capture->owner, extras);
    if (absl::IsFailedPrecondition(s)) {
      // The process records itself (StartTrace): share that trace from now
      // on, into a file of the capture's own (the one made for the session
      // that did not start is removed; a new sink makes another).
      if (capture->worker_writes) {
        RemoveWorkerFile(options_.capture_root, file_path);
      }
      std::string shared_id;
      PODSCOPE_ASSIGN_OR_RETURN(std::unique_ptr<tf::RecordSink> tap_sink,
                                make_sink());
      absl::Status shared = internal::ShareLocalSession(
          std::move(tap_sink), o, capture->owner, &shared_id, extras);
      if (shared.ok()) {
        if (wanted.empty()) capture->session_id = shared_id;
        capture->shares_local_trace = true;
        s = absl::OkStatus();
      } else if (!absl::IsFailedPrecondition(shared)) {
        s = shared;
      }
    }
  }
  if (!s.ok()) {
    if (capture->worker_writes) {
      RemoveWorkerFile(options_.capture_root, file_path);
    }
    return s;
  }
  capture->file.set_path(file_path);
  PlanWindowEnd(*capture, source != nullptr);
  if (capture->window) capture->window->Arm();
  current_ = capture;
  cv_.notify_all();  // the controller takes it
  return capture;
}

void CaptureHub::Leave(const std::shared_ptr<Capture>& c) {
  std::lock_guard<std::mutex> lock(mutex_);
  c->clients -= 1;
  cv_.notify_all();
}

absl::StatusOr<std::string> CaptureHub::Stop(const std::string& session_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!current_ || current_->finished || current_->stop) {
    return absl::NotFoundError(session_id.empty()
                                   ? std::string("no capture is running")
                                   : absl::StrCat("no capture of session '",
                                                  session_id, "' is running"));
  }
  if (!session_id.empty() && session_id != current_->session_id) {
    return absl::NotFoundError(absl::StrCat("no capture of session '",
                                            session_id,
                                            "' is running (the running "
                                            "one is '",
                                            current_->session_id, "')"));
  }
  current_->stop = true;
  cv_.notify_all();
  return current_->session_id;
}

void CaptureHub::StopAll() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (current_) current_->stop = true;
  cv_.notify_all();
  ForgetFinishedLocked(lock, /*wait=*/true);
}

absl::Status CaptureHub::WaitForEnd(
    std::unique_lock<std::mutex>& lock, Capture& c,
    std::chrono::milliseconds interval,
    const std::function<bool(absl::Status*)>& poll) {
  while (true) {
    const int64_t now = MonotonicNs();
    if (c.stop || c.clients <= 0 || now >= c.deadline_ns)
      return absl::OkStatus();
    if (c.stream->overflow()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the capture ended early: it outgrew the server's ",
                       options_.max_capture_bytes, "-byte limit"));
    }
    const int64_t wait_ns = std::min<int64_t>(
        c.deadline_ns - now,
        std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count());
    cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
    lock.unlock();
    absl::Status why;
    const bool more = poll(&why);
    lock.lock();
    if (!more) return why;
  }
}

void CaptureHub::Control(std::shared_ptr<Capture> c) {
  CaptureSource* const source = options_.capture_source.get();
  // The worker's file is in its folder for good once the folder is synced:
  // done here, while it records, not when hundreds of workers end at the
  // same instant (the file itself is synced when it is closed).
  if (c->file_state) SyncWorkerFolder(c->file_dir);
  absl::Status end;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    end = WaitForEnd(lock, *c, std::chrono::milliseconds(100),
                     [&](absl::Status* why) {
                       if (source != nullptr) {
                         c->stream->SetProgress(source->events(), 0);
                         return true;
                       }
                       const SessionStats st = CurrentSessionStats();
                       c->stream->SetProgress(st.events, st.dropped);
                       // The window of steps closed (or cannot open).
                       if (c->window && c->window->closed()) {
                         *why = c->window->error();
                         return false;
                       }
                       // A shared trace that stopped ended the capture.
                       return OwnedSessionRunning(c->owner);
                     });
    c->ending = true;
  }
  if (c->window) {
    c->window->Disarm();
    // Stopped or left before its end: the window ends now.
    if (source == nullptr) c->window->CloseNow();
  }
  if (source != nullptr) {
    absl::Status s = source->Stop();
    if (!s.ok() && end.ok()) end = s;
    c->stream->SetProgress(source->events(), 0);
  } else {
    absl::Status s = internal::StopOwnedSession(c->owner);
    if (!s.ok() && end.ok()) end = s;
    const SessionStats st = CurrentSessionStats();
    if (st.events != 0 || st.dropped != 0) {
      c->stream->SetProgress(st.events, st.dropped);
    }
  }
  DescribeFile(*c, MonotonicNs());
  c->stream->Finish(end);
  std::lock_guard<std::mutex> lock(mutex_);
  c->finished = true;
  cv_.notify_all();
}

void CaptureHub::DescribeFile(Capture& c, int64_t stopped_ns) {
  const ClockSkew& skew = TestClockSkew();
  int64_t start = c.started_ns, end = stopped_ns;
  if (c.window) {
    start = c.window->start_ns();
    if (c.window->end_ns() != 0) end = c.window->end_ns();
    if (start == 0) end = 0;  // it never opened
  }
  c.file.set_window_start_ns(start == 0 ? 0 : skew.Apply(start));
  c.file.set_window_end_ns(end == 0 ? 0 : skew.Apply(end));
  if (!c.file_state) return;
  c.file.set_bytes(c.file_state->bytes.load());
  std::lock_guard<std::mutex> lock(c.file_state->mutex);
  c.file.set_crc32(c.file_state->crc32);
}

void CaptureHub::ForgetFinishedLocked(std::unique_lock<std::mutex>& lock,
                                      bool wait) {
  if (!current_) return;
  if (wait) cv_.wait(lock, [&] { return current_->finished; });
  if (current_->finished) current_.reset();
}

}  // namespace podscope::profiler::internal
