#include "src/capture_window.h"

#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/trace.h"

namespace podscope::profiler {
namespace internal {
namespace {

std::mutex& ArmedMutex() {
  static auto* m = new std::mutex();
  return *m;
}
// The window step boundaries reach; guarded by ArmedMutex().
std::shared_ptr<CaptureWindow>& Armed() {
  static auto* w = new std::shared_ptr<CaptureWindow>();
  return *w;
}

}  // namespace

std::atomic<int> g_step_watchers{0};

void StepBoundarySlow(int64_t step, bool begin) {
  std::shared_ptr<CaptureWindow> w;
  {
    std::lock_guard<std::mutex> lock(ArmedMutex());
    w = Armed();
  }
  if (w) w->OnStep(step, begin);
}

NameSite* StepSite() {
  static NameSite site{"train_step"};
  return &site;
}

std::shared_ptr<CaptureWindow> CaptureWindow::At(uint64_t start_ticks,
                                                 int64_t start_ns) {
  std::shared_ptr<CaptureWindow> w(new CaptureWindow());
  w->start_ticks_.store(start_ticks, std::memory_order_relaxed);
  w->start_ns_.store(start_ns, std::memory_order_relaxed);
  w->open_.store(true, std::memory_order_release);
  return w;
}

std::shared_ptr<CaptureWindow> CaptureWindow::Steps(int64_t first,
                                                    int64_t last) {
  std::shared_ptr<CaptureWindow> w(new CaptureWindow());
  w->by_steps_ = true;
  w->first_step_ = first;
  w->last_step_ = last;
  return w;
}

void CaptureWindow::OpenNow() {
  start_ns_.store(MonotonicNs(), std::memory_order_relaxed);
  start_ticks_.store(Ticks(), std::memory_order_relaxed);
  open_.store(true, std::memory_order_release);
}

void CaptureWindow::CloseNow() {
  std::lock_guard<std::mutex> lock(mutex_);
  CloseNowLocked();
}

void CaptureWindow::CloseNowLocked() {
  if (closed()) return;
  const uint64_t ticks = Ticks();
  const int64_t ns = MonotonicNs();
  const bool sooner =
      !planned_end_.load(std::memory_order_relaxed) ||
      static_cast<int64_t>(ticks - end_ticks_.load(std::memory_order_relaxed)) <
          0;
  if (sooner) {
    end_ticks_.store(ticks, std::memory_order_relaxed);
    end_ns_.store(ns, std::memory_order_relaxed);
  }
  closed_.store(true, std::memory_order_release);
}

void CaptureWindow::PlanEnd(uint64_t end_ticks, int64_t end_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed()) return;
  end_ticks_.store(end_ticks, std::memory_order_relaxed);
  end_ns_.store(end_ns, std::memory_order_relaxed);
  planned_end_.store(true, std::memory_order_release);
}

absl::Status CaptureWindow::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void CaptureWindow::OnStep(int64_t step, bool begin) {
  if (!by_steps_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed()) return;
  if (!open()) {
    if (begin && step == first_step_) {
      OpenNow();
    } else if (step > first_step_) {
      // The first step has passed (the request came late, or the program
      // skips numbers): the window cannot hold it.
      error_ = absl::FailedPreconditionError(absl::StrCat(
          "step ", first_step_, " had passed: the program is at step ", step,
          " (ask for a later window)"));
      CloseNowLocked();
    }
    return;
  }
  // The last step's end, or (its end never marked) a later step's start.
  if ((!begin && step == last_step_) || (begin && step > last_step_)) {
    CloseNowLocked();
  }
}

void CaptureWindow::Arm() {
  if (!by_steps_) return;
  std::lock_guard<std::mutex> lock(ArmedMutex());
  if (!Armed()) g_step_watchers.fetch_add(1, std::memory_order_relaxed);
  Armed() = shared_from_this();
}

void CaptureWindow::Disarm() {
  std::lock_guard<std::mutex> lock(ArmedMutex());
  if (Armed().get() != this) return;
  Armed().reset();
  g_step_watchers.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace podscope::profiler
