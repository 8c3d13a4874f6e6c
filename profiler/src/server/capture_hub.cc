#include "src/server/capture_hub.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/session.h"
#include "podscope/trace_format/format.h"
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

// Reads a trace file that its writer is still appending to and hands on
// whole records only: the header first, then every record whose bytes are
// all on disk (a record the writer is in the middle of waits for the next
// read).
class FileFollower {
 public:
  ~FileFollower() {
    if (fd_ >= 0) close(fd_);
  }
  absl::Status Open(const std::string& path) {
    path_ = path;
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the process records itself to ", path,
          ", which cannot be read: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  // Reads what was appended since the last call (at most `max_read` bytes)
  // and appends its whole records to `out`.
  absl::Status Poll(std::string* out, size_t max_read) {
    size_t got = 0;
    char buf[1 << 16];
    while (got < max_read) {
      const ssize_t n = pread(fd_, buf, sizeof buf, static_cast<off_t>(read_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::DataLossError(absl::StrCat("reading ", path_, ": ",
                                                std::strerror(errno)));
      }
      if (n == 0) break;
      pending_.append(buf, static_cast<size_t>(n));
      read_ += static_cast<uint64_t>(n);
      got += static_cast<size_t>(n);
    }
    size_t pos = 0;
    if (!header_done_) {
      if (pending_.size() < trace_format::kFileHeaderSize) return absl::OkStatus();
      absl::Status s = trace_format::CheckFileHeader(
          std::string_view(pending_).substr(0, trace_format::kFileHeaderSize),
          path_);
      if (!s.ok()) return s;
      header_done_ = true;
      pos = trace_format::kFileHeaderSize;
    }
    while (pending_.size() - pos >= trace_format::kRecordHeaderSize) {
      const trace_format::RecordFrame frame =
          trace_format::PeekRecordFrame(std::string_view(pending_).substr(pos));
      if (frame.payload_length > trace_format::kMaxRecordPayload) {
        return absl::DataLossError(absl::StrCat(
            path_, " holds an impossible record length ", frame.payload_length,
            " at offset ", read_ - (pending_.size() - pos)));
      }
      if (pending_.size() - pos < frame.size()) break;
      if (frame.type == trace_format::RecordType::kTrailer) closed_ = true;
      pos += frame.size();
    }
    out->append(pending_, 0, pos);
    pending_.erase(0, pos);
    return absl::OkStatus();
  }
  // The writer closed the file: its trailer was read.
  bool closed() const { return closed_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t read_ = 0;
  std::string pending_;
  bool header_done_ = false;
  bool closed_ = false;
};


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
  if (absl::IsFailedPrecondition(s)) {
    // The process records itself (StartTrace): follow that trace instead,
    // with its own options, from its first byte.
    const std::string path = CurrentTracePath();
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return s;
    bool active = false;
    const std::string local_session = ActiveSessionId(&active);
    if (wanted.empty() && !local_session.empty()) {
      capture->session_id = local_session;
    }
    capture->owner = 0;
    capture->local_path = path;
    current_ = capture;
    capture->controller = std::thread([this, capture] { FollowLocal(capture); });
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

absl::Status CaptureHub::WaitForEnd(
    std::unique_lock<std::mutex>& lock, Capture& c,
    std::chrono::milliseconds interval,
    const std::function<bool(absl::Status*)>& poll) {
  while (true) {
    const int64_t now = MonotonicNs();
    if (c.stop || c.clients <= 0 || now >= c.deadline_ns) return absl::OkStatus();
    if (c.stream->overflow()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the capture ended early: it outgrew the server's ",
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
                       return true;
                     });
  }
  absl::Status s = internal::StopOwnedSession(c->owner);
  if (!s.ok() && end.ok()) end = s;
  c->stream->Finish(end);
  std::lock_guard<std::mutex> lock(mutex_);
  c->finished = true;
  cv_.notify_all();
}

void CaptureHub::FollowLocal(std::shared_ptr<Capture> c) {
  constexpr size_t kMaxReadPerPoll = 8 << 20;
  FileFollower file;
  absl::Status end = file.Open(c->local_path);
  std::string out;
  // Hands on what the file holds now; false when the follow must end.
  auto pump = [&](absl::Status* why) {
    out.clear();
    absl::Status s = file.Poll(&out, kMaxReadPerPoll);
    if (!out.empty()) c->stream->Append(out);
    if (!s.ok()) {
      *why = s;
      return false;
    }
    if (CurrentTracePath() == c->local_path) {
      const SessionStats st = CurrentSessionStats();
      c->stream->SetProgress(st.events, st.dropped);
    }
    return !file.closed();
  };
  if (end.ok()) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      end = WaitForEnd(lock, *c, std::chrono::milliseconds(50), pump);
    }
    if (end.ok() && !file.closed() && !c->stream->overflow()) {
      // The events of the capture's last moments are on disk after the
      // writer's next drain; wait for it (or for the trace to end).
      const uint64_t flushes = CurrentSessionStats().flushes;
      const int64_t give_up = MonotonicNs() + 1'000'000'000;
      absl::Status why;
      while (MonotonicNs() < give_up && pump(&why)) {
        if (CurrentTracePath() != c->local_path ||
            CurrentSessionStats().flushes >= flushes + 2) {
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (!why.ok()) end = why;
      if (end.ok()) pump(&why);
    }
    if (!file.closed()) c->stream->SetReceiverIndexes();
  }
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
