#include "src/server/capture_writer.h"

#include <grpcpp/alarm.h>

#include <chrono>
#include <mutex>
#include <string>
#include <utility>

#include "podscope/profiler/grpc_status.h"

namespace podscope::profiler::internal {
namespace {

using Clock = std::chrono::system_clock;

constexpr size_t kMaxMessageBytes = 1 << 20;
// A worker-side capture's stream carries no bytes: its progress goes out
// about this often.
constexpr auto kProgressEvery = std::chrono::seconds(1);
// A streamed capture's bytes go out as the stream tells of them; this is
// only the longest the writer goes without looking.
constexpr auto kLookAtLeastEvery = std::chrono::seconds(1);
// A streamed capture's first message (which names the session) waits this
// long for the trace's first bytes (its header), so that it carries them;
// a worker-side capture's goes at once: it tells the client the worker is
// ready.
constexpr auto kFirstWaitsForBytes = std::chrono::milliseconds(250);

grpc::Status ClientWentAway() {
  return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
}

class CaptureWriter;

// The stream's way to its writer, cut when the call is done: a change that
// comes later finds no writer.
class WriterWaker final : public StreamListener {
 public:
  explicit WriterWaker(CaptureWriter* writer) : writer_(writer) {}
  void StreamChanged() override;
  void Detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    writer_ = nullptr;
  }

 private:
  std::mutex mutex_;
  CaptureWriter* writer_;  // guarded by mutex_
};

// Every decision is made under mutex_; every gRPC call (a write, the
// finish, an alarm's cancel) is made without it, since gRPC may run the
// reactor's own callbacks from inside them.
class CaptureWriter final : public grpc::ServerWriteReactor<pb::CaptureData> {
 public:
  // What Prepare made ready: nothing, a message, the last message (sent
  // with the call's status), or the end of a call the client cancelled.
  struct Ready {
    enum Kind { kNone, kWrite, kLast, kFinish } kind = kNone;
    grpc::Status status;  // kLast's and kFinish's
  };

  CaptureWriter(CaptureHub* hub, std::shared_ptr<Capture> capture)
      : hub_(hub),
        capture_(std::move(capture)),
        waker_(std::make_shared<WriterWaker>(this)) {}

  void Begin() {
    capture_->stream->Listen(waker_);
    std::unique_lock<std::mutex> lock(mutex_);
    first_due_ = capture_->worker_writes ? Clock::now()
                                         : Clock::now() + kFirstWaitsForBytes;
    Step(lock);
  }

  // The stream changed (any thread). A worker-side capture's writer looks
  // at once, on the calling thread: its messages are small (progress, and
  // the file's facts at the end), and the thread that tells it is the
  // hub's controller, which ends the capture, so no gRPC thread has to
  // wake for it (hundreds of servers in one process ending together share
  // a few). What it makes ready, the caller sends with Send, holding no
  // lock: a write in flight keeps the call, and so the writer, alive. A
  // streamed capture's writer looks on gRPC's threads rather than on the
  // one that appended (the session's drainer).
  Ready Wake() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finishing_ || writing_) return {};  // OnWriteDone looks again
    if (capture_->worker_writes) return Prepare(lock);
    if (alarm_set_) {
      // Its callback looks at once.
      std::shared_ptr<grpc::Alarm> alarm = alarm_;
      lock.unlock();
      alarm->Cancel();
      return {};
    }
    SetAlarm(Clock::now());
    return {};
  }

  // Starts the write Prepare made ready (no lock held).
  void Send(Ready ready) {
    if (ready.kind == Ready::kLast) {
      // One batch with the status: no OnWriteDone, then OnDone.
      StartWriteAndFinish(&data_, grpc::WriteOptions(),
                          std::move(ready.status));
    } else if (ready.kind == Ready::kWrite) {
      StartWrite(&data_);
    } else if (ready.kind == Ready::kFinish) {
      ServerWriteReactor::Finish(std::move(ready.status));
    }
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mutex_);
    writing_ = false;
    if (!ok) return Finish(lock, ClientWentAway());
    Step(lock);
  }

  void OnCancel() override {
    std::unique_lock<std::mutex> lock(mutex_);
    cancelled_ = true;
    // A write in flight ends with !ok, and finishes then.
    if (!writing_) Finish(lock, ClientWentAway());
  }

  void OnDone() override {
    waker_->Detach();
    hub_->Leave(capture_);
    std::unique_lock<std::mutex> lock(mutex_);
    done_ = true;
    if (!alarm_set_) {
      lock.unlock();
      delete this;
      return;
    }
    // The alarm's callback deletes the writer; `this` may be gone as soon
    // as the lock is released.
    std::shared_ptr<grpc::Alarm> alarm = alarm_;
    lock.unlock();
    alarm->Cancel();
  }

 private:
  void OnAlarm() {
    std::unique_lock<std::mutex> lock(mutex_);
    alarm_set_ = false;
    if (done_) {
      lock.unlock();
      delete this;
      return;
    }
    Step(lock);
  }

  // mutex_ held, no alarm set. The callback never runs inside Set.
  void SetAlarm(Clock::time_point when) {
    alarm_set_ = true;
    alarm_ = std::make_shared<grpc::Alarm>();
    alarm_->Set(when, [this](bool) { OnAlarm(); });
  }

  // Ends the call once (mutex_ held; released).
  void Finish(std::unique_lock<std::mutex>& lock, grpc::Status status) {
    if (finishing_) return;
    finishing_ = true;
    lock.unlock();
    ServerWriteReactor::Finish(std::move(status));
  }

  // Sends what there is to send, or sleeps until there is (mutex_ held;
  // may be released).
  void Step(std::unique_lock<std::mutex>& lock) {
    Ready ready = Prepare(lock);
    if (ready.kind == Ready::kNone) return;
    lock.unlock();
    Send(std::move(ready));
  }

  // The next message, when there is one to send now (mutex_ held
  // throughout). Else sets the alarm for the next look: a worker-side
  // capture's stream tells of its progress, so its writer needs none.
  Ready Prepare(std::unique_lock<std::mutex>& lock) {
    (void)lock;
    if (finishing_ || writing_) return {};
    if (cancelled_) {
      finishing_ = true;
      return {Ready::kFinish, ClientWentAway()};
    }
    data_.Clear();
    absl::Status end;
    const bool done =
        capture_->stream->Next(&cursor_, &bytes_, kMaxMessageBytes,
                               std::chrono::milliseconds(0), &data_, &end);
    const Clock::time_point now = Clock::now();
    const bool progress = capture_->worker_writes && now >= next_progress_;
    if (bytes_.empty() && !done && !progress &&
        !(first_ && now >= first_due_)) {
      // (A worker-side capture's first message is due at once.)
      if (!alarm_set_ && !capture_->worker_writes) {
        SetAlarm(first_ ? first_due_ : now + kLookAtLeastEvery);
      }
      return {};
    }
    next_progress_ = now + kProgressEvery;
    data_.set_records(std::move(bytes_));
    bytes_.clear();
    if (first_) data_.set_session_id(capture_->session_id);
    data_.set_done(done);
    if (capture_->file_state) {
      data_.set_file_bytes(capture_->file_state->bytes.load());
      // The hub set the file's facts before it finished the stream.
      if (done) *data_.mutable_file() = capture_->file;
    }
    first_ = false;
    writing_ = true;
    if (!done) return {Ready::kWrite, grpc::Status()};
    finishing_ = true;
    return {Ready::kLast, end.ok() ? grpc::Status() : ToGrpcStatus(end)};
  }

  CaptureHub* const hub_;
  const std::shared_ptr<Capture> capture_;
  const std::shared_ptr<WriterWaker> waker_;

  std::mutex mutex_;
  // The rest is guarded by mutex_ (data_ is the write's while writing_).
  size_t cursor_ = 0;
  std::string bytes_;
  pb::CaptureData data_;
  bool first_ = true;
  bool writing_ = false;
  bool cancelled_ = false;
  bool finishing_ = false;
  bool done_ = false;
  bool alarm_set_ = false;
  std::shared_ptr<grpc::Alarm> alarm_;
  Clock::time_point next_progress_;
  Clock::time_point first_due_;
};

void WriterWaker::StreamChanged() {
  CaptureWriter* writer = nullptr;
  CaptureWriter::Ready ready;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (writer_ == nullptr) return;
    writer = writer_;
    ready = writer->Wake();
  }
  // Nothing to send: the writer may be gone as soon as the lock is
  // released, so it is not touched again.
  if (ready.kind == CaptureWriter::Ready::kNone) return;
  // The write made ready is not started yet: the call cannot end before
  // it is, so the writer is still there.
  writer->Send(std::move(ready));
}

class Refusal final : public grpc::ServerWriteReactor<pb::CaptureData> {
 public:
  explicit Refusal(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerWriteReactor<pb::CaptureData>* StartCaptureWriter(
    CaptureHub* hub, std::shared_ptr<Capture> capture) {
  auto* writer = new CaptureWriter(hub, std::move(capture));
  writer->Begin();
  return writer;
}

grpc::ServerWriteReactor<pb::CaptureData>* RefuseCapture(grpc::Status status) {
  return new Refusal(std::move(status));
}

}  // namespace podscope::profiler::internal
