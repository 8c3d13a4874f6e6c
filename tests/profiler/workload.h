// A thread that records scopes until destroyed, for tests that capture a
// process while it works.
#ifndef PODSCOPE_TESTS_PROFILER_WORKLOAD_H_
#define PODSCOPE_TESTS_PROFILER_WORKLOAD_H_

#include <atomic>
#include <chrono>
#include <thread>

#include "podscope/profiler/trace.h"

namespace podscope::profiler::testing {

class Workload {
 public:
  // One "work" scope per `period`.
  explicit Workload(
      std::chrono::microseconds period = std::chrono::microseconds(200))
      : thread_([this, period] {
          SetThreadName("workload");
          while (!stop_.load()) {
            PODSCOPE_TRACE("work");
            std::this_thread::sleep_for(period);
          }
        }) {}
  ~Workload() {
    stop_ = true;
    thread_.join();
  }
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_WORKLOAD_H_
