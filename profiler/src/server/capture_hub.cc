#include "src/server/capture_hub.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/record_io.h"
#include "src/server/capture_request.h"
#include "src/session_internal.h"

namespace podscope::profiler::internal {
namespace {

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
    // Unlocks while its controller is joined: look again after.
    JoinFinishedLocked(lock);
  }
}

absl::StatusOr<std::shared_ptr<Capture>> CaptureHub::JoinRunningLocked(
    const pb::CaptureRequest& r, int64_t deadline_ns) {
  Capture& c = *current_;
  const std::string& wanted = r.session_id();
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
  capture->deadline_ns = deadline_ns;
  capture->clients = 1;
  TraceOptions o = CaptureTraceOptions(r);
  o.session_id = capture->session_id;
  absl::Status s = internal::StartOwnedSession(
      std::make_unique<StreamSink>(capture->stream), o,
      absl::StrCat("remote capture '", capture->session_id, "' for ", peer),
      capture->owner);
  if (absl::IsFailedPrecondition(s)) {
    // The process records itself (StartTrace): share that trace from now
    // on, into a file of the capture's own.
    std::string shared_id;
    absl::Status shared = internal::ShareLocalSession(
        std::make_unique<StreamSink>(capture->stream), o, capture->owner,
        &shared_id);
    if (absl::IsFailedPrecondition(shared)) return s;
    if (!shared.ok()) return shared;
    if (wanted.empty()) capture->session_id = shared_id;
    capture->shares_local_trace = true;
    current_ = capture;
    capture->controller = std::thread([this, capture] { Control(capture); });
    return capture;
  }
  if (!s.ok()) return s;
  current_ = capture;
  capture->controller = std::thread([this, capture] { Control(capture); });
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
  JoinFinishedLocked(lock, /*wait=*/true);
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
  absl::Status end;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    end = WaitForEnd(lock, *c, std::chrono::milliseconds(100),
                     [&](absl::Status*) {
                       const SessionStats st = CurrentSessionStats();
                       c->stream->SetProgress(st.events, st.dropped);
                       // A shared trace that stopped ended the capture.
                       return OwnedSessionRunning(c->owner);
                     });
    c->ending = true;
  }
  absl::Status s = internal::StopOwnedSession(c->owner);
  if (!s.ok() && end.ok()) end = s;
  c->stream->Finish(end);
  std::lock_guard<std::mutex> lock(mutex_);
  c->finished = true;
  cv_.notify_all();
}

void CaptureHub::JoinFinishedLocked(std::unique_lock<std::mutex>& lock,
                                    bool wait) {
  if (!current_) return;
  if (wait) cv_.wait(lock, [&] { return current_->finished; });
  if (!current_->finished) return;
  std::shared_ptr<Capture> old = std::move(current_);
  lock.unlock();
  if (old->controller.joinable()) old->controller.join();
  lock.lock();
}

}  // namespace podscope::profiler::internal
