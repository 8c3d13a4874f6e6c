// The part of a session's time a capture keeps: from a scheduled instant,
// or from the beginning of one step to the end of another as the program
// marks them (PODSCOPE_STEP). The session records meanwhile as usual; its
// drainers keep only the events that start inside the window. Thread
// events are judged by their ticks, external events (device streams) by
// their monotonic time.
//
// Thread-safety: a step boundary opens or closes the window from the
// program's thread while the drain thread reads it. The boundary stores
// the window's edge before it publishes `open` (release), and every event
// the program records after it is committed later still, so a drain pass
// that acquired such an event sees the edge too: an event is never judged
// against a window that is opening.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_WINDOW_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_WINDOW_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"

namespace podscope::profiler::internal {

class CaptureWindow : public std::enable_shared_from_this<CaptureWindow> {
 public:
  // Opens at `start_ticks` (Ticks()) and `start_ns` (CLOCK_MONOTONIC), the
  // same instant.
  static std::shared_ptr<CaptureWindow> At(uint64_t start_ticks,
                                           int64_t start_ns);
  // Opens when step `first` begins and closes when step `last` ends.
  static std::shared_ptr<CaptureWindow> Steps(int64_t first, int64_t last);

  bool by_steps() const { return by_steps_; }
  bool open() const { return open_.load(std::memory_order_acquire); }
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // Whether an event of a thread that started at `ticks` is inside.
  bool AcceptsTicks(uint64_t ticks) const {
    if (!open()) return false;
    if (static_cast<int64_t>(
            ticks - start_ticks_.load(std::memory_order_relaxed)) < 0) {
      return false;
    }
    return !has_end() ||
           static_cast<int64_t>(
               ticks - end_ticks_.load(std::memory_order_relaxed)) <= 0;
  }
  // The same for an event stamped in monotonic nanoseconds.
  bool AcceptsNs(int64_t monotonic_ns) const {
    if (!open()) return false;
    if (monotonic_ns < start_ns_.load(std::memory_order_relaxed)) return false;
    return !has_end() ||
           monotonic_ns <= end_ns_.load(std::memory_order_relaxed);
  }

  // The window's edges in monotonic nanoseconds (0 while not reached; the
  // end also while only planned and not yet passed... see PlanEnd).
  int64_t start_ns() const {
    return open() ? start_ns_.load(std::memory_order_relaxed) : 0;
  }
  int64_t end_ns() const {
    return has_end() ? end_ns_.load(std::memory_order_relaxed) : 0;
  }

  // A scheduled window's end, known ahead (the capture's duration): events
  // after it are not kept, however late the capture is stopped, so that
  // the files of every worker cover the same window. A later end (another
  // client asking for longer) moves it; CloseNow before it ends it sooner.
  void PlanEnd(uint64_t end_ticks, int64_t end_ns);

  // Why the window can no longer open (a later step began first); OK
  // otherwise.
  absl::Status error() const;

  // A step boundary, from the program's thread.
  void OnStep(int64_t step, bool begin);
  // Ends the window now (when it has a planned end, only if that is
  // later).
  void CloseNow();

  // Step boundaries reach this window until Disarm (one window at a time:
  // one capture records a process at a time).
  void Arm();
  void Disarm();

 private:
  CaptureWindow() = default;
  void OpenNow();
  void CloseNowLocked();  // mutex_ held

  bool has_end() const {
    return closed() || planned_end_.load(std::memory_order_acquire);
  }

  bool by_steps_ = false;
  int64_t first_step_ = 0, last_step_ = 0;
  std::atomic<uint64_t> start_ticks_{0}, end_ticks_{0};
  std::atomic<int64_t> start_ns_{0}, end_ns_{0};
  std::atomic<bool> open_{false}, closed_{false}, planned_end_{false};
  // Serialises boundaries and ends; guards error_.
  mutable std::mutex mutex_;
  absl::Status error_;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_WINDOW_H_
