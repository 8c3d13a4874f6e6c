// Records a "tick" slice every millisecond until it is killed. Used by
// session_test to check what a killed process leaves behind.
#include <chrono>
#include <cstdio>
#include <thread>

#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  podscope::profiler::TraceOptions options;
  options.flush_interval = std::chrono::milliseconds(50);
  if (!podscope::profiler::StartTrace(argv[1], options).ok()) return 1;
  for (int64_t i = 0;; ++i) {
    { PODSCOPE_TRACE("tick", "seq", i); }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
