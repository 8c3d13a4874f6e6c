#include "instrumentation.h"

#include <time.h>

namespace podscope::runtime::internal {
namespace {

RuntimeObserver& NoOpObserver() {
  static RuntimeObserver* const observer = new RuntimeObserver();
  return *observer;
}

std::atomic<RuntimeObserver*> g_observer{nullptr};
thread_local int64_t t_lazy_step = -1;

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void SetRuntimeObserver(RuntimeObserver* observer) {
  g_observer.store(observer, std::memory_order_release);
}

bool SetRuntimeObserverIfUnset(RuntimeObserver* observer) {
  RuntimeObserver* expected = nullptr;
  return g_observer.compare_exchange_strong(expected, observer,
                                            std::memory_order_acq_rel);
}

RuntimeObserver& Observer() {
  RuntimeObserver* observer = g_observer.load(std::memory_order_acquire);
  return observer != nullptr ? *observer : NoOpObserver();
}

bool ObserverActive() {
  return g_observer.load(std::memory_order_relaxed) != nullptr;
}

int64_t CurrentLazyStep() { return t_lazy_step; }

ScopedLazyStep::ScopedLazyStep(int64_t step) : previous_(t_lazy_step) {
  t_lazy_step = step;
}

ScopedLazyStep::~ScopedLazyStep() { t_lazy_step = previous_; }

}  // namespace podscope::runtime::internal
