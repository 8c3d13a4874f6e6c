// The smallest program that embeds the profiler: trace a few scopes and
// write a file that `podscope summary` reads.
//
//   hello_trace [DIR]     (default: ./hello_trace_out)
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"

double Work(int n) {
  PODSCOPE_TRACE("work", "n", n);
  double sum = 0;
  for (int i = 1; i <= n; ++i) sum += std::sqrt(static_cast<double>(i));
  return sum;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "hello_trace_out";
  if (auto s = podscope::profiler::StartTrace(dir); !s.ok()) {
    std::fprintf(stderr, "hello_trace: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  podscope::profiler::SetThreadName("main");
  double total = 0;
  for (int step = 0; step < 10; ++step) {
    PODSCOPE_TRACE("step", "index", step);
    std::thread helper([] {
      podscope::profiler::SetThreadName("helper");
      PODSCOPE_TRACE("helper_task");
      Work(200000);
    });
    total += Work(100000 * (step + 1));
    PODSCOPE_COUNTER("total", total);
    helper.join();
  }
  PODSCOPE_INSTANT("done");
  auto path = podscope::profiler::StopTrace();
  if (!path.ok()) {
    std::fprintf(stderr, "hello_trace: %s\n",
                 std::string(path.status().message()).c_str());
    return 1;
  }
  std::printf("hello_trace: wrote %s (result %.1f)\n", path->c_str(), total);
  return 0;
}
