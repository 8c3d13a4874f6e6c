// The statistics and the CPU accounting behind the overhead figures.
#include <linux/perf_event.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "common/cpu_accounting.h"
#include "common/paired_stats.h"
#include "gtest/gtest.h"

namespace podscope::bench {
namespace {

TEST(PairedStats, IntervalHoldsTheMedianAndIsReproducible) {
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.8, 0.5);
  std::vector<double> pct(20);
  for (double& x : pct) x = noise(rng);
  const MedianInterval a = BootstrapMedian(pct);
  const MedianInterval b = BootstrapMedian(pct);
  EXPECT_LE(a.low, a.median);
  EXPECT_GE(a.high, a.median);
  EXPECT_LT(a.low, a.high);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
}

TEST(PairedStats, MorePairsNarrowTheInterval) {
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<double> few(10), many(400);
  for (double& x : few) x = noise(rng);
  for (double& x : many) x = noise(rng);
  const MedianInterval f = BootstrapMedian(few);
  const MedianInterval m = BootstrapMedian(many);
  EXPECT_LT(m.high - m.low, (f.high - f.low) / 2);
}

// A 95 % interval holds the true median about 95 % of the time: in 300
// samples of 20 pairs, it must hold it in at least 85 % of them.
TEST(PairedStats, IntervalHoldsTheTrueMedianMostOfTheTime) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(1.0, 2.0);
  int held = 0;
  constexpr int kSamples = 300;
  for (int i = 0; i < kSamples; ++i) {
    std::vector<double> pct(20);
    for (double& x : pct) x = noise(rng);
    const MedianInterval ci = BootstrapMedian(pct, 1000, i + 1);
    held += ci.low <= 1.0 && 1.0 <= ci.high;
  }
  EXPECT_GE(held, kSamples * 85 / 100);
  EXPECT_LT(held, kSamples);  // an interval that always holds it is too wide
}

TEST(PairedStats, QuantileInterpolates) {
  EXPECT_DOUBLE_EQ(Quantile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3}, 0.0), 1);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3}, 1.0), 3);
  EXPECT_DOUBLE_EQ(Quantile({}, 0.5), 0);
}

// Runs until this thread has used `ms` of CPU time, however busy the
// machine is.
void Spin(int ms) {
  timespec ts;
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 10000; ++i) x = x + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  } while (ts.tv_sec * 1000 + ts.tv_nsec / 1'000'000 < ms);
}

TEST(CpuAccounting, NamedThreadsCountAsTheProfilers) {
  const CpuSnapshot before = TakeCpuSnapshot();
  std::thread profiler_like([] {
    pthread_setname_np(pthread_self(), "podscope-test");
    Spin(60);
  });
  std::atomic<bool> done{false}, spun{false};
  std::thread program_like([&] {
    Spin(60);
    spun = true;
    // Stays alive until the snapshot, like the program's threads.
    while (!done.load()) std::this_thread::yield();
  });
  profiler_like.join();
  while (!spun.load()) std::this_thread::yield();
  // The profiler's thread exited: it counts in the process's total only.
  const CpuSnapshot exited = TakeCpuSnapshot();
  done = true;
  program_like.join();
  const CpuSplit split = SplitCpu(before, exited);
  EXPECT_GE(split.program_ns, 60'000'000);
  // The exited thread's 60 ms are in the process's total.
  EXPECT_GE(split.process_ns, split.program_ns + 60'000'000);
  EXPECT_EQ(split.profiler_ns, 0);

  std::atomic<bool> stop{false};
  std::thread live([&] {
    pthread_setname_np(pthread_self(), "podscope-test");
    Spin(60);
    while (!stop.load()) std::this_thread::yield();
  });
  const CpuSnapshot start = TakeCpuSnapshot();
  // The live thread's CPU time since `start` reaches 5 ms (it spins, then
  // yields in a loop): the split sees it as the profiler's.
  CpuSplit live_split;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    std::this_thread::yield();
    live_split = SplitCpu(start, TakeCpuSnapshot());
  } while (live_split.profiler_ns < 5'000'000 &&
           std::chrono::steady_clock::now() < deadline);
  stop = true;
  live.join();
  EXPECT_GE(live_split.profiler_ns, 5'000'000);
  EXPECT_LE(live_split.profiler_ns, live_split.process_ns);
}

// The counter over every thread: one alive before it opened, one created
// after (and exited before the read), and the caller. The software task
// clock (ns of CPU) stands in for the instruction counter, which most
// virtual machines do not have; the plumbing is the same.
TEST(ProcessEventCounter, CountsEveryThreadAndThoseCreatedLater) {
  std::atomic<bool> go{false};
  std::thread existing([&] {
    while (!go.load()) std::this_thread::yield();
    const int64_t t0 = ThreadCpuNs();
    while (ThreadCpuNs() - t0 < 60'000'000) {
    }
  });
  auto counter =
      ProcessEventCounter::Open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
  if (!counter.ok()) {
    go = true;
    existing.join();
    GTEST_SKIP() << counter.status();
  }
  const int64_t c0 = (*counter)->Read();
  const int64_t cpu0 = ProcessCpuNs();
  go = true;
  std::thread later([] {
    const int64_t t0 = ThreadCpuNs();
    while (ThreadCpuNs() - t0 < 60'000'000) {
    }
  });
  const int64_t t0 = ThreadCpuNs();
  while (ThreadCpuNs() - t0 < 60'000'000) {
  }
  later.join();
  existing.join();
  const int64_t counted = (*counter)->Read() - c0;
  const int64_t cpu = ProcessCpuNs() - cpu0;
  EXPECT_GE(counted, 170'000'000) << "process CPU meanwhile " << cpu;
  EXPECT_LE(counted, cpu + 20'000'000);
}

// The instruction counter either counts or says why it cannot.
TEST(ProcessEventCounter, InstructionsCountOrSayWhyNot) {
  auto counter = ProcessEventCounter::Open();
  if (!counter.ok()) {
    EXPECT_NE(counter.status().message().find("perf_event_open"),
              std::string::npos)
        << counter.status();
    return;
  }
  const int64_t c0 = (*counter)->Read();
  volatile uint64_t x = 0;
  for (int i = 0; i < 1'000'000; ++i) x = x + 1;
  EXPECT_GE((*counter)->Read() - c0, 1'000'000);
}

}  // namespace
}  // namespace podscope::bench
