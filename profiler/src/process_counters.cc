#include "src/process_counters.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "podscope/profiler/clock.h"

namespace podscope::profiler::internal {

ProcessCounterSampler::~ProcessCounterSampler() {
  if (statm_fd_ >= 0) close(statm_fd_);
}

// /proc/self/statm is opened once and read again from its start at every
// sample: a session samples ten times a second for as long as it records,
// and opening the file (a stream, its locale and buffer) was most of what
// an idle session's drain thread did. A forked child opens its own.
double ProcessCounterSampler::ResidentBytes() {
  const pid_t pid = getpid();
  if (statm_fd_ >= 0 && statm_pid_ != pid) {
    close(statm_fd_);
    statm_fd_ = -1;
  }
  if (statm_fd_ < 0) {
    statm_fd_ = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    statm_pid_ = pid;
    if (statm_fd_ < 0) return 0;
  }
  // "size resident shared text lib data dt", in pages.
  char text[128];
  ssize_t n;
  do {
    n = pread(statm_fd_, text, sizeof(text) - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* end = nullptr;
  (void)std::strtol(text, &end, 10);
  const long pages_resident = std::strtol(end, nullptr, 10);
  return static_cast<double>(pages_resident) * static_cast<double>(page_size_);
}

ProcessCounterSampler::Reading ProcessCounterSampler::Sample() {
  Reading r;
  r.monotonic_ns = MonotonicNs();
  r.resident_bytes = ResidentBytes();
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
