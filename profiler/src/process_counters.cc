#include "src/process_counters.h"

#include <time.h>
#include <unistd.h>

#include <fstream>

#include "podscope/profiler/clock.h"

namespace podscope::profiler::internal {

ProcessCounterSampler::Reading ProcessCounterSampler::Sample() {
  Reading r;
  r.monotonic_ns = MonotonicNs();
  long pages_resident = 0;
  {
    std::ifstream statm("/proc/self/statm");
    long size = 0;
    statm >> size >> pages_resident;
  }
  r.resident_bytes = static_cast<double>(pages_resident) *
                     static_cast<double>(sysconf(_SC_PAGESIZE));
  timespec cpu;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  const int64_t cpu_ns = int64_t{cpu.tv_sec} * 1'000'000'000 + cpu.tv_nsec;
  if (last_ns_ != 0 && r.monotonic_ns > last_ns_) {
    r.cpu_percent = 100.0 * static_cast<double>(cpu_ns - last_cpu_ns_) /
                    static_cast<double>(r.monotonic_ns - last_ns_);
  }
  last_ns_ = r.monotonic_ns;
  last_cpu_ns_ = cpu_ns;
  return r;
}

}  // namespace podscope::profiler::internal
