// Samples this process's resource use for a session's counter tracks:
// resident memory (bytes) at every sample and CPU use (percent of one core)
// over the interval since the previous sample.
#ifndef PODSCOPE_PROFILER_SRC_PROCESS_COUNTERS_H_
#define PODSCOPE_PROFILER_SRC_PROCESS_COUNTERS_H_

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <optional>

namespace podscope::profiler::internal {

class ProcessCounterSampler {
 public:
  struct Reading {
    int64_t monotonic_ns = 0;  // when it was taken (CLOCK_MONOTONIC)
    double resident_bytes = 0;
    // Absent at the first sample (no interval yet).
    std::optional<double> cpu_percent;
  };

  // The counters' track names and units.
  static constexpr const char* kResidentName = "process resident memory";
  static constexpr const char* kResidentUnit = "bytes";
  static constexpr const char* kCpuName = "process CPU use";
  static constexpr const char* kCpuUnit = "%";

  ProcessCounterSampler() = default;
  ProcessCounterSampler(const ProcessCounterSampler&) = delete;
  ProcessCounterSampler& operator=(const ProcessCounterSampler&) = delete;
  ~ProcessCounterSampler();

  Reading Sample();

 private:
  double ResidentBytes();

  int statm_fd_ = -1;
  pid_t statm_pid_ = 0;
  const long page_size_ = sysconf(_SC_PAGESIZE);
  int64_t last_ns_ = 0;
  int64_t last_cpu_ns_ = 0;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_PROCESS_COUNTERS_H_
