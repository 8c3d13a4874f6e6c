#include "src/server/capture_hub.h"

#include <algorithm>
#include <atomic>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/record_io.h"
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

absl::StatusOr<std::shared_ptr<Capture>> CaptureHub::Join(const pb::CaptureRequest& r,
                                              const std::string& peer) {
  if (r.duration_ms() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration_ms must be 0 (until stopped) or positive, not ",
        r.duration_ms()));
  }
  if (r.duration_ms() > options_.max_duration_ms) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration_ms ", r.duration_ms(), " exceeds this server's limit of ",
        options_.max_duration_ms, " ms"));
  }
  if (r.level() < 0 || r.level() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("level must be 0..3, not ", r.level()));
  }
  if (r.sampling_hz() < 0 || r.sampling_hz() > 10000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling_hz must be 0..10000, not ", r.sampling_hz()));
  }
  if (r.compression_level() < -1 || r.compression_level() > 9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression_level must be -1..9, not ", r.compression_level()));
  }
  const std::string wanted = r.session_id();
  if (!wanted.empty() && !IsValidSessionId(wanted)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "session id '", wanted, "' is not valid (1 to 128 of letters, "
        "digits, '-', '_', '.', ':', '+')"));
  }
  const int64_t now = MonotonicNs();
  const int64_t want_ns =
      (r.duration_ms() == 0 ? options_.max_duration_ms : r.duration_ms()) *
      1'000'000;
  std::unique_lock<std::mutex> lock(mutex_);
  if (current_ && !current_->finished) {
    Capture& c = *current_;
    if (!wanted.empty() && wanted != c.session_id &&
        !r.join_any_session()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a capture for session '", c.session_id,
          "' is running; ask for that session (or none) to share it"));
    }
    if (c.stop) {
      return absl::UnavailableError("the running capture is stopping; retry");
    }
    if (c.clients >= options_.max_clients) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the running capture already has ", c.clients,
          " clients (the limit is ", options_.max_clients, ")"));
    }
    if (c.stream->overflow()) {
      return absl::UnavailableError(
          "the running capture has outgrown the bytes kept for late "
          "clients; retry when it ends");
    }
    c.clients += 1;
    c.deadline_ns = std::min(std::max(c.deadline_ns, now + want_ns),
                             c.started_ns + options_.max_duration_ms * 1'000'000);
    cv_.notify_all();
    return current_;
  }
  JoinFinishedLocked(lock);
  auto capture = std::make_shared<Capture>();
  capture->session_id =
      wanted.empty() ? UtcSessionId(/*with_millis=*/true) : wanted;
  capture->owner = g_next_owner.fetch_add(1);
  capture->stream = std::make_shared<CaptureStream>(options_.max_capture_bytes);
  capture->started_ns = now;
  capture->deadline_ns = now + want_ns;
  capture->clients = 1;
  TraceOptions o;
  o.session_id = capture->session_id;
  o.level = r.level() == 0 ? Level::kInfo : static_cast<Level>(r.level());
  o.sampling_hz = r.sampling_hz();
  if (r.compression_level() >= 0) o.compression_level = r.compression_level();
  absl::Status s = internal::StartOwnedSession(
      std::make_unique<StreamSink>(capture->stream), o,
      absl::StrCat("remote capture '", capture->session_id, "' for ", peer),
      capture->owner);
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
    return absl::NotFoundError(
        session_id.empty()
            ? std::string("no capture is running")
            : absl::StrCat("no capture of session '", session_id,
                           "' is running"));
  }
  if (!session_id.empty() && session_id != current_->session_id) {
    return absl::NotFoundError(absl::StrCat(
        "no capture of session '", session_id, "' is running (the running "
        "one is '", current_->session_id, "')"));
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

void CaptureHub::Control(std::shared_ptr<Capture> c) {
  absl::Status end;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      const int64_t now = MonotonicNs();
      if (c->stop || c->clients <= 0 || now >= c->deadline_ns) break;
      if (c->stream->overflow()) {
        end = absl::ResourceExhaustedError(absl::StrCat(
            "the capture ended early: it outgrew the server's ",
            options_.max_capture_bytes, "-byte limit"));
        break;
      }
      const int64_t wait_ns = std::min<int64_t>(c->deadline_ns - now, 100'000'000);
      cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
      lock.unlock();
      const SessionStats st = CurrentSessionStats();
      c->stream->SetProgress(st.events, st.dropped);
      lock.lock();
    }
  }
  absl::Status s = internal::StopOwnedSession(c->owner);
  if (!s.ok() && end.ok()) end = s;
  c->stream->Finish(end);
  std::lock_guard<std::mutex> lock(mutex_);
  c->finished = true;
  cv_.notify_all();
}

void CaptureHub::JoinFinishedLocked(std::unique_lock<std::mutex>& lock, bool wait) {
  if (!current_) return;
  if (wait) cv_.wait(lock, [&] { return current_->finished; });
  if (!current_->finished) return;
  std::shared_ptr<Capture> old = std::move(current_);
  lock.unlock();
  if (old->controller.joinable()) old->controller.join();
  lock.lock();
}

}  // namespace podscope::profiler::internal
