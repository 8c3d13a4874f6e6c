// Completion signals for asynchronous device work: Event (a status, set once)
// and Future<T> (a status or a value). Copies share state; waiting, polling
// and chained callbacks are thread-safe, and callbacks run exactly once.
#ifndef PODSCOPE_RUNTIME_PJRT_FUTURE_H_
#define PODSCOPE_RUNTIME_PJRT_FUTURE_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::runtime {

// A one-shot completion signal carrying a status, shared by copies. Device
// work completes on stream threads; host code awaits or chains callbacks.
class Event {
 public:
  // A pending event.
  Event();
  // An event that is already complete with `status`.
  static Event Ready(absl::Status status = absl::OkStatus());

  // Completes the event. Only the first call has an effect.
  void Set(absl::Status status) const;
  bool IsReady() const;
  // Blocks until complete and returns the completion status.
  absl::Status Await() const;
  // Runs `callback` once complete: immediately if already complete,
  // otherwise on the thread that completes the event, before Await() and
  // IsReady() report completion. A callback must not await its own event.
  void OnReady(std::function<void(const absl::Status&)> callback) const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool has_status = false;  // Set() has begun
    bool ready = false;       // ... and its callbacks have run
    absl::Status status;
    std::vector<std::function<void(const absl::Status&)>> callbacks;
  };
  std::shared_ptr<State> state_;
};

// An Event that also carries a value of type T once complete.
template <typename T>
class Future {
 public:
  Future() : slot_(std::make_shared<std::optional<T>>()) {}

  static Future Ready(absl::StatusOr<T> value) {
    Future future;
    future.Set(std::move(value));
    return future;
  }

  // Completes the future with a value or an error.
  void Set(absl::StatusOr<T> value) const {
    if (value.ok()) {
      *slot_ = std::move(value).value();
      event_.Set(absl::OkStatus());
    } else {
      event_.Set(value.status());
    }
  }
  bool IsReady() const { return event_.IsReady(); }
  const Event& event() const { return event_; }

  // Blocks until complete; returns the value or the error.
  absl::StatusOr<T> Await() const {
    absl::Status status = event_.Await();
    if (!status.ok()) return status;
    return **slot_;
  }

 private:
  Event event_;
  // Written once before event_ completes; read only after it completes.
  std::shared_ptr<std::optional<T>> slot_;
};

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_PJRT_FUTURE_H_
