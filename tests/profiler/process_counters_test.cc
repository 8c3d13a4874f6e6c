// The process counters a session samples at every flush: resident memory
// as the kernel states it, read again from one open file at each sample.
#include "src/process_counters.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "gtest/gtest.h"

namespace podscope::profiler::internal {
namespace {

double StatmResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(getpagesize());
}

TEST(ProcessCounters, ResidentMemoryFollowsWhatTheProcessTouches) {
  ProcessCounterSampler sampler;
  const ProcessCounterSampler::Reading first = sampler.Sample();
  EXPECT_FALSE(first.cpu_percent.has_value());
  const double statm = StatmResidentBytes();
  EXPECT_GT(first.resident_bytes, 0);
  EXPECT_NEAR(first.resident_bytes, statm, 8 << 20);

  // 64 MiB touched, then given back: each sample reads the file again.
  constexpr size_t kBytes = size_t{64} << 20;
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, kBytes);
  const ProcessCounterSampler::Reading touched = sampler.Sample();
  EXPECT_GE(touched.resident_bytes, first.resident_bytes + 56.0 * (1 << 20));
  ASSERT_TRUE(touched.cpu_percent.has_value());
  EXPECT_GT(*touched.cpu_percent, 0);
  munmap(p, kBytes);
  const ProcessCounterSampler::Reading released = sampler.Sample();
  EXPECT_LE(released.resident_bytes, touched.resident_bytes - 56.0 * (1 << 20));
}

// A forked child's sampler reads the child's memory, not its parent's.
TEST(ProcessCounters, AForkedChildReadsItsOwnMemory) {
  ProcessCounterSampler sampler;
  const double parent = sampler.Sample().resident_bytes;
  ASSERT_GT(parent, 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    constexpr size_t kBytes = size_t{96} << 20;
    void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(2);
    std::memset(p, 1, kBytes);
    const double grown = sampler.Sample().resident_bytes;
    _exit(grown >= parent + 80.0 * (1 << 20) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "the child's sample did not show its own 96 MiB";
}

}  // namespace
}  // namespace podscope::profiler::internal
