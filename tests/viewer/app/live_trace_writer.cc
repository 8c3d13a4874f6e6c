// A process that records for a while with StartTrace, for the viewer's live
// tests: `live_trace_writer DIR DURATION_MS [DELAY_MS]` waits DELAY_MS,
// then records nested "step" / "forward" / "backward" scopes on two
// threads into DIR for DURATION_MS, flushing every 50 ms, and stops.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"

namespace {

void Spin(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: live_trace_writer DIR DURATION_MS [DELAY]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int duration_ms = std::atoi(argv[2]);
  const int delay_ms = argc > 3 ? std::atoi(argv[3]) : 0;
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  podscope::profiler::TraceOptions options;
  options.flush_interval = std::chrono::milliseconds(50);
  if (auto s = podscope::profiler::StartTrace(dir, options); !s.ok()) {
    std::fprintf(stderr, "live_trace_writer: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  podscope::profiler::SetThreadName("main");
  std::atomic<bool> stop{false};
  std::thread helper([&] {
    podscope::profiler::SetThreadName("helper");
    while (!stop.load()) {
      PODSCOPE_TRACE("helper_task");
      Spin(std::chrono::microseconds(300));
    }
  });
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(duration_ms);
  for (int step = 0; std::chrono::steady_clock::now() < end; ++step) {
    PODSCOPE_TRACE("step", "index", step);
    {
      PODSCOPE_TRACE("forward");
      Spin(std::chrono::microseconds(400));
    }
    {
      PODSCOPE_TRACE("backward");
      Spin(std::chrono::microseconds(600));
    }
  }
  stop = true;
  helper.join();
  auto path = podscope::profiler::StopTrace();
  if (!path.ok()) {
    std::fprintf(stderr, "live_trace_writer: %s\n",
                 std::string(path.status().message()).c_str());
    return 1;
  }
  return 0;
}
