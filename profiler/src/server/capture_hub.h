// The concurrent core of the profiler server, without gRPC: a capture is
// the process's session recording into a CaptureStream that keeps every
// byte for the capture's clients; the hub starts a capture for the first
// client, lets later clients join it, and ends it at the latest deadline
// of its clients, on Stop, when every client has gone, or when it outgrows
// its memory bound.
#ifndef PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_HUB_H_
#define PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_HUB_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/profiler/profiler_service.pb.h"
#include "podscope/profiler/server.h"
#include "src/capture_window.h"
#include "src/server/worker_file.h"

namespace podscope::profiler::internal {

namespace pb = ::podscope::profiler::proto;

// Told when a CaptureStream has more bytes or has finished: how a client
// served without a thread of its own learns that it has something to send.
class StreamListener {
 public:
  virtual ~StreamListener() = default;
  // Called without the stream's lock held, from the thread that appended
  // or finished; must not block.
  virtual void StreamChanged() = 0;
};

// The bytes a capture's session writes, kept for every client of the
// capture (a client that joins late replays them from the start).
class CaptureStream {
 public:
  explicit CaptureStream(int64_t max_bytes) : max_bytes_(max_bytes) {}

  void Append(std::string_view bytes) {
    if (bytes.empty()) return;
    std::vector<std::shared_ptr<StreamListener>> tell;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      starts_.push_back(static_cast<size_t>(total_));
      pieces_.emplace_back(bytes);
      total_ += static_cast<int64_t>(bytes.size());
      if (total_ > max_bytes_) overflow_ = true;
      cv_.notify_all();
      tell = LiveListenersLocked();
    }
    for (const auto& l : tell) l->StreamChanged();
  }

  // Tells `listener` of every change from now on, for as long as it lives
  // (the stream keeps no reference that would keep it alive).
  void Listen(std::weak_ptr<StreamListener> listener) {
    std::lock_guard<std::mutex> lock(mutex_);
    listeners_.push_back(std::move(listener));
  }

  // Listeners are told of progress too (a worker-side capture's stream,
  // which carries no bytes: its progress is all its client hears).
  void TellProgress() {
    std::lock_guard<std::mutex> lock(mutex_);
    tells_progress_ = true;
  }

  void SetProgress(uint64_t events, uint64_t dropped) {
    std::vector<std::shared_ptr<StreamListener>> tell;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (events == events_ && dropped == dropped_) return;
      events_ = events;
      dropped_ = dropped;
      if (tells_progress_) tell = LiveListenersLocked();
    }
    for (const auto& l : tell) l->StreamChanged();
  }

  // The stream will end without an index (see CaptureData.receiver_indexes).
  void SetReceiverIndexes() {
    std::lock_guard<std::mutex> lock(mutex_);
    receiver_indexes_ = true;
  }
  void Finish(absl::Status status) {
    std::vector<std::shared_ptr<StreamListener>> tell;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
      status_ = std::move(status);
      cv_.notify_all();
      tell = LiveListenersLocked();
    }
    for (const auto& l : tell) l->StreamChanged();
  }

  bool overflow() {
    std::lock_guard<std::mutex> lock(mutex_);
    return overflow_;
  }

  // Waits up to `wait` for bytes beyond `*cursor` (the bytes read so far:
  // 0 at first), or the end, then moves up to `max_bytes` (at least 1) of
  // them into `out`: whole pieces, or a part of one that is larger than
  // `max_bytes` alone (a flush after a long backlog can be larger than any
  // message a client takes). Returns true when the stream is finished and
  // `out` holds its last bytes.
  bool Next(size_t* cursor, std::string* out, size_t max_bytes,
            std::chrono::milliseconds wait, pb::CaptureData* progress,
            absl::Status* end_status) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto total = [&] { return static_cast<size_t>(total_); };
    cv_.wait_for(lock, wait, [&] { return *cursor < total() || finished_; });
    out->clear();
    max_bytes = std::max<size_t>(max_bytes, 1);
    while (*cursor < total() && out->size() < max_bytes) {
      // The last piece that starts at or before the cursor holds it (empty
      // pieces are never kept).
      const size_t i = static_cast<size_t>(
          std::upper_bound(starts_.begin(), starts_.end(), *cursor) -
          starts_.begin() - 1);
      const size_t rest = pieces_[i].size() - (*cursor - starts_[i]);
      // Whole pieces (whole records) while they fit; a piece is cut only
      // when it alone is over the limit.
      if (!out->empty() && out->size() + rest > max_bytes) break;
      const size_t n = std::min(rest, max_bytes - out->size());
      out->append(pieces_[i], pieces_[i].size() - rest, n);
      *cursor += n;
      if (n < rest) break;
    }
    progress->set_events(events_);
    progress->set_dropped(dropped_);
    *end_status = status_;
    const bool last = finished_ && *cursor == total();
    if (last) progress->set_receiver_indexes(receiver_indexes_);
    return last;
  }

 private:
  // The listeners still alive; the others are forgotten.
  std::vector<std::shared_ptr<StreamListener>> LiveListenersLocked() {
    std::vector<std::shared_ptr<StreamListener>> live;
    size_t kept = 0;
    for (size_t i = 0; i < listeners_.size(); ++i) {
      if (auto l = listeners_[i].lock()) {
        live.push_back(std::move(l));
        // Never moved onto itself: that would empty it.
        if (kept != i) listeners_[kept] = std::move(listeners_[i]);
        ++kept;
      }
    }
    listeners_.resize(kept);
    return live;
  }

  const int64_t max_bytes_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::weak_ptr<StreamListener>> listeners_;
  std::vector<std::string> pieces_;
  std::vector<size_t> starts_;  // of each piece, in bytes of the stream
  int64_t total_ = 0;
  bool overflow_ = false;
  bool finished_ = false;
  bool receiver_indexes_ = false;
  bool tells_progress_ = false;
  absl::Status status_;
  uint64_t events_ = 0, dropped_ = 0;
};

// One limit on the bytes that concurrent answers hold at once: each of
// XProf's Profile calls of one capture keeps its own copy of the whole
// capture until it has answered, so the copies share one budget instead of
// each having the capture's.
class ByteBudget {
 public:
  // `name` is what a refusal calls the limit (an option's name).
  ByteBudget(int64_t limit, std::string name)
      : limit_(limit), name_(std::move(name)) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  int64_t held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

  // What one answer holds; given back when it is destroyed.
  class Holding {
   public:
    explicit Holding(ByteBudget* budget) : budget_(budget) {}
    Holding(const Holding&) = delete;
    Holding& operator=(const Holding&) = delete;
    ~Holding() { Release(); }
    // RESOURCE_EXHAUSTED naming the limit, holding nothing more, when every
    // holding together would pass it.
    absl::Status Take(int64_t bytes);
    void Release();

   private:
    ByteBudget* const budget_;
    int64_t held_ = 0;
  };

 private:
  mutable std::mutex mutex_;
  const int64_t limit_;
  const std::string name_;
  int64_t held_ = 0;  // guarded by mutex_
};

// One capture: the process's session, recording into a CaptureStream,
// which the hub's controller thread ends at the latest deadline of its
// clients, on Stop, when every client has gone, or when it outgrows memory.
// When the
// process already records itself (StartTrace), the capture shares that
// trace instead (ShareLocalSession): its stream gets the events from the
// capture's start on, in a file of its own, and it also ends when that
// trace does.
struct Capture {
  std::string session_id;
  uint64_t owner = 0;
  bool shares_local_trace = false;
  std::shared_ptr<CaptureStream> stream;
  // A worker-side capture: the file it writes (the stream then carries no
  // bytes, only its end), and what its sink has written so far.
  bool worker_writes = false;
  std::shared_ptr<WorkerFileState> file_state;
  std::string file_dir;
  // Set before the stream finishes.
  pb::WorkerFile file;
  // The scheduled start or window of steps (null: from the start on).
  std::shared_ptr<CaptureWindow> window;
  int64_t started_ns = 0;
  int64_t deadline_ns = 0;  // guarded by the hub's mutex
  int clients = 0;          // guarded by the hub's mutex
  bool stop = false;        // guarded by the hub's mutex
  // Its end was reached or asked for: it takes no more clients, and a
  // request then waits for it to finish and gets a capture of its own.
  bool ending = false;      // guarded by the hub's mutex
  bool finished = false;    // guarded by the hub's mutex
  bool controlled = false;  // taken by the controller; the hub's mutex
};

// The hub's one controller thread lives as long as the hub: a capture
// starts no thread of its own, so that a host serving many captures at
// once (or a process serving many servers) does not create threads at the
// moment they all start.
class CaptureHub {
 public:
  explicit CaptureHub(const ServerOptions& options);
  CaptureHub(const CaptureHub&) = delete;
  CaptureHub& operator=(const CaptureHub&) = delete;
  ~CaptureHub();

  // Joins the running capture or starts one. A request that breaks a limit
  // (ValidateCaptureRequest) is refused before either.
  absl::StatusOr<std::shared_ptr<Capture>> Join(const pb::CaptureRequest& r,
                                                const std::string& peer);

  void Leave(const std::shared_ptr<Capture>& c);

  // Stops the capture named `session_id` (any, if empty).
  absl::StatusOr<std::string> Stop(const std::string& session_id);

  void StopAll();

 private:
  // Adds a client to the running capture (hub mutex held), which then
  // lasts at least until `deadline_ns`, within its limit.
  absl::StatusOr<std::shared_ptr<Capture>> JoinRunningLocked(
      const pb::CaptureRequest& r, int64_t deadline_ns);
  // Starts a capture (hub mutex held, no capture running).
  absl::StatusOr<std::shared_ptr<Capture>> StartLocked(
      const pb::CaptureRequest& r, const std::string& peer, int64_t now,
      int64_t deadline_ns);
  // The controller thread: takes each capture as it starts and ends it.
  void ControlLoop();
  void Control(std::shared_ptr<Capture> c);
  // The file's facts once its session stopped.
  void DescribeFile(Capture& c, int64_t stopped_ns);
  // Waits (hub mutex held) until the capture should end; returns why it
  // ended early (OK when on time, stopped or left by its clients).
  // `poll` runs without the mutex every interval.
  absl::Status WaitForEnd(std::unique_lock<std::mutex>& lock, Capture& c,
                          std::chrono::milliseconds interval,
                          const std::function<bool(absl::Status*)>& poll);

  // Forgets the current capture once it has finished (waiting for that
  // first when `wait`).
  void ForgetFinishedLocked(std::unique_lock<std::mutex>& lock,
                            bool wait = false);

  const ServerOptions options_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::shared_ptr<Capture> current_;
  bool closing_ = false;  // guarded by mutex_
  std::thread controller_;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SERVER_CAPTURE_HUB_H_
