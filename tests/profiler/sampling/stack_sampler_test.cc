#include "src/sampling/stack_sampler.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "src/sampling/symbolizer.h"

namespace podscope::profiler::sampling {
namespace {

using Sample = StackSampler::Sample;

pid_t Gettid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int64_t ThreadCpuNs() {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

int64_t MonotonicNs() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// Burns `cpu_ns` of the calling thread's CPU time (not wall time: the test
// machine is shared, and CPU time is what the sampler measures). The clock
// read between rounds is also where ThreadSanitizer delivers signals.
__attribute__((noinline, noclone)) uint64_t SpinInHotFunction(int64_t cpu_ns) {
  const int64_t end = ThreadCpuNs() + cpu_ns;
  uint64_t x = 1;
  do {
    for (int i = 0; i < 20'000; ++i) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      asm volatile("" : "+r"(x));
    }
  } while (ThreadCpuNs() < end);
  return x;
}

// Notification and std::mutex are avoided in this file: Debian's
// prebuilt abseil is not instrumented, so ThreadSanitizer would not see
// their synchronisation and report false races.
class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  void WaitForNotification() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  bool HasBeenNotified() {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// A thread that publishes its tid, waits to be released, then runs `body`.
class TestThread {
 public:
  explicit TestThread(std::function<void()> body)
      : thread_([this, body = std::move(body)] {
          tid_.store(Gettid());
          go_.WaitForNotification();
          body();
        }) {
    while (tid_.load() == 0) std::this_thread::yield();
  }
  ~TestThread() {
    if (!go_.HasBeenNotified()) go_.Notify();
    if (thread_.joinable()) thread_.join();
  }
  pid_t tid() const { return tid_.load(); }
  void Start() { go_.Notify(); }
  void Join() { thread_.join(); }

 private:
  std::atomic<pid_t> tid_{0};
  Notification go_;
  std::thread thread_;
};

// Collects drained samples; safe to call from a draining thread.
struct Collected {
  std::mutex mu;
  std::vector<Sample> samples;
  std::function<void(const Sample&)> Sink() {
    return [this](const Sample& s) {
      std::lock_guard<std::mutex> lock(mu);
      samples.push_back(s);
    };
  }
  std::vector<Sample> For(pid_t tid) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.tid == tid) out.push_back(s);
    }
    return out;
  }
};

bool StackContains(Symbolizer& symbolizer, const Sample& sample,
                   const std::string& needle) {
  for (uint32_t i = 0; i < sample.depth; ++i) {
    const Frame frame = i == 0
                            ? symbolizer.Symbolize(sample.ips[i])
                            : symbolizer.SymbolizeReturnAddress(sample.ips[i]);
    if (frame.function.find(needle) != std::string::npos) return true;
  }
  return false;
}

uint64_t TotalWeight(const std::vector<Sample>& samples) {
  uint64_t total = 0;
  for (const Sample& s : samples) total += s.weight;
  return total;
}

// Linux checks CPU-time timers on the scheduler tick, and only for the task
// that is running then: on a machine overloaded by other builds, a thread may
// use a lot of CPU between two signals (the overrun weights account for it).
// So the tests spin until they have what they need instead of for a fixed
// time; kPatience is only reached if sampling is broken.
constexpr absl::Duration kPatience = absl::Seconds(60);

// Spins in SpinInHotFunction, 10 ms of CPU at a time, until `enough()`.
// Returns the CPU time spent.
int64_t SpinUntil(const std::function<bool()>& enough) {
  const int64_t start = ThreadCpuNs();
  const absl::Time deadline = absl::Now() + kPatience;
  do {
    SpinInHotFunction(10'000'000);
  } while (!enough() && absl::Now() < deadline);
  return ThreadCpuNs() - start;
}

TEST(StackSamplerTest, SpinningThreadIsSampledInItsHotFunctionIdleOneIsNot) {
  auto sampler = StackSampler::Create({});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  const int64_t start_ns = MonotonicNs();

  Collected collected;
  std::atomic<bool> enough_samples{false};
  std::atomic<int64_t> hot_cpu_ns{-1};
  TestThread hot([&] {
    // At least 300 ms of CPU, longer if the machine is too busy to have
    // produced 20 samples by then.
    const int64_t start = ThreadCpuNs();
    const int64_t spent = SpinUntil([&] {
      return ThreadCpuNs() - start >= 300'000'000 && enough_samples.load();
    });
    hot_cpu_ns.store(spent);
  });
  Notification hot_done;
  TestThread idle([&] { hot_done.WaitForNotification(); });
  ASSERT_TRUE((*sampler)->RegisterThread(hot.tid()).ok());
  ASSERT_TRUE((*sampler)->RegisterThread(idle.tid()).ok());
  idle.Start();
  hot.Start();
  while (hot_cpu_ns.load() < 0) {
    (*sampler)->Drain(collected.Sink());
    if (collected.For(hot.tid()).size() >= 20) enough_samples.store(true);
    absl::SleepFor(absl::Milliseconds(10));
  }
  hot.Join();
  hot_done.Notify();
  idle.Join();
  // The thread has exited: unregistering it now must be harmless.
  (*sampler)->UnregisterThread(hot.tid());
  (*sampler)->Drain(collected.Sink());
  const int64_t end_ns = MonotonicNs();
  const std::vector<Sample> hot_samples = collected.For(hot.tid());
  const std::vector<Sample> idle_samples = collected.For(idle.tid());

  ASSERT_GE(hot_samples.size(), 10u);
  Symbolizer symbolizer;
  size_t in_hot_function = 0;
  for (const Sample& sample : hot_samples) {
    EXPECT_GE(sample.monotonic_ns, start_ns);
    EXPECT_LE(sample.monotonic_ns, end_ns);
    ASSERT_GE(sample.depth, 1u);
    ASSERT_LE(sample.depth, kMaxStackDepth);
    if (StackContains(symbolizer, sample, "SpinInHotFunction")) {
      ++in_hot_function;
    }
  }
  EXPECT_GT(in_hot_function * 2, hot_samples.size())
      << in_hot_function << " of " << hot_samples.size()
      << " samples contain SpinInHotFunction";
  // Weighted by the overruns, the samples add up to the CPU time used (less
  // the stretch since the last signal).
  const double expected_periods = hot_cpu_ns.load() * 997.0 / 1e9;
  EXPECT_GT(TotalWeight(hot_samples), expected_periods * 0.5);
  EXPECT_LT(TotalWeight(hot_samples), expected_periods * 1.3);

  EXPECT_LE(idle_samples.size(), 1u);
  EXPECT_EQ((*sampler)->dropped(), 0u);
}

TEST(StackSamplerTest, DrainingConcurrentlyLosesNothingButCountedDrops) {
  auto sampler = StackSampler::Create({});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  Collected collected;
  std::atomic<size_t> drained_while_sampling{0};
  std::atomic<int64_t> hot_cpu_ns{-1};
  TestThread hot([&] {
    const int64_t start = ThreadCpuNs();
    hot_cpu_ns.store(SpinUntil([&] {
      return ThreadCpuNs() - start >= 300'000'000 &&
             drained_while_sampling.load() >= 20;
    }));
  });
  ASSERT_TRUE((*sampler)->RegisterThread(hot.tid()).ok());

  std::thread drainer([&] {
    while (hot_cpu_ns.load() < 0) {
      drained_while_sampling += (*sampler)->Drain(collected.Sink());
      absl::SleepFor(absl::Milliseconds(2));
    }
  });
  hot.Start();
  hot.Join();
  drainer.join();
  (*sampler)->Stop();
  (*sampler)->Drain(collected.Sink());

  const std::vector<Sample> samples = collected.For(hot.tid());
  EXPECT_GT(drained_while_sampling.load(), 0u);
  ASSERT_GE(samples.size(), 10u);
  // Each sample exactly once, in the order taken.
  for (size_t i = 1; i < samples.size(); ++i) {
    EXPECT_LT(samples[i - 1].monotonic_ns, samples[i].monotonic_ns);
  }
  // Nothing missing: with no drops, the weights account for the CPU time.
  EXPECT_EQ((*sampler)->dropped(), 0u);
  const double expected_periods = hot_cpu_ns.load() * 997.0 / 1e9;
  EXPECT_GT(TotalWeight(samples), expected_periods * 0.5);
  EXPECT_LT(TotalWeight(samples), expected_periods * 1.3);
}

TEST(StackSamplerTest, OverflowingATinyRingCountsDrops) {
  auto sampler = StackSampler::Create({.ring_samples = 2});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  TestThread hot(
      [&] { SpinUntil([&] { return (*sampler)->dropped() >= 5; }); });
  ASSERT_TRUE((*sampler)->RegisterThread(hot.tid()).ok());
  hot.Start();
  hot.Join();

  Collected collected;
  EXPECT_EQ((*sampler)->Drain(collected.Sink()), 2u);  // the two oldest
  EXPECT_GE((*sampler)->dropped(), 5u);
  ASSERT_EQ(collected.samples.size(), 2u);
  EXPECT_LT(collected.samples[0].monotonic_ns,
            collected.samples[1].monotonic_ns);
  const uint64_t dropped = (*sampler)->dropped();
  (*sampler)->Stop();
  EXPECT_EQ((*sampler)->dropped(), dropped);  // the count is kept
}

std::atomic<int> g_custom_handler_calls{0};
std::atomic<int> g_custom_handler_last_value{0};
void CustomHandler(int, siginfo_t* info, void*) {
  g_custom_handler_calls.fetch_add(1);
  g_custom_handler_last_value.store(info->si_value.sival_int);
}

TEST(StackSamplerTest, StopRestoresThePreviousHandlerWhichGetsForeignSignals) {
  const int signal = SIGRTMIN + 4;
  struct sigaction custom {};
  custom.sa_sigaction = CustomHandler;
  custom.sa_flags = SA_SIGINFO;
  sigemptyset(&custom.sa_mask);
  ASSERT_EQ(sigaction(signal, &custom, nullptr), 0);

  auto sampler = StackSampler::Create({.signal = signal});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  EXPECT_EQ((*sampler)->signal_number(), signal);
  struct sigaction current {};
  ASSERT_EQ(sigaction(signal, nullptr, &current), 0);
  EXPECT_NE(current.sa_sigaction, CustomHandler);

  // The sampler's own timer signals do not reach the previous handler. (The
  // sampled thread drains its own samples: allowed from any thread.)
  Collected collected;
  TestThread hot([&] {
    SpinUntil([&] { return (*sampler)->Drain(collected.Sink()) > 0; });
  });
  ASSERT_TRUE((*sampler)->RegisterThread(hot.tid()).ok());
  hot.Start();
  hot.Join();
  EXPECT_GT(collected.For(hot.tid()).size(), 0u);
  EXPECT_EQ(g_custom_handler_calls.load(), 0);

  // Someone else's signal does reach it, with its payload.
  union sigval value;
  value.sival_int = 42;
  ASSERT_EQ(pthread_sigqueue(pthread_self(), signal, value), 0);
  EXPECT_EQ(g_custom_handler_calls.load(), 1);
  EXPECT_EQ(g_custom_handler_last_value.load(), 42);

  (*sampler)->Stop();
  ASSERT_EQ(sigaction(signal, nullptr, &current), 0);
  EXPECT_EQ(current.sa_sigaction, CustomHandler);
  EXPECT_TRUE(current.sa_flags & SA_SIGINFO);
  value.sival_int = 43;
  ASSERT_EQ(pthread_sigqueue(pthread_self(), signal, value), 0);
  EXPECT_EQ(g_custom_handler_calls.load(), 2);
  EXPECT_EQ(g_custom_handler_last_value.load(), 43);

  custom.sa_handler = SIG_DFL;
  custom.sa_flags = 0;
  sigaction(signal, &custom, nullptr);
}

// The default action of a real-time signal is to terminate the process, so
// a timer signal still pending when the default is restored would kill it.
TEST(StackSamplerTest, StopWhileThreadsSpinLeavesTheProcessAlive) {
  for (int round = 0; round < 5; ++round) {
    auto sampler = StackSampler::Create({.rate_hz = 20'000});
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    std::atomic<bool> stop{false};
    std::vector<std::unique_ptr<TestThread>> threads;
    for (int i = 0; i < 2; ++i) {
      threads.push_back(std::make_unique<TestThread>([&] {
        while (!stop.load()) SpinInHotFunction(1'000'000);
      }));
      ASSERT_TRUE((*sampler)->RegisterThread(threads.back()->tid()).ok());
      threads.back()->Start();
    }
    absl::SleepFor(absl::Milliseconds(30));
    (*sampler)->Stop();
    absl::SleepFor(absl::Milliseconds(20));  // any stray signal lands here
    stop.store(true);
    threads.clear();
    struct sigaction current {};
    ASSERT_EQ(sigaction(SIGRTMIN + 3, nullptr, &current), 0);
    EXPECT_EQ(current.sa_handler, SIG_DFL);
  }
}

// A timer signal may still be in flight when Stop() runs (older kernels keep
// signals of deleted timers pending). Simulated here with a signal queued
// while blocked: after Stop() it must be gone, not delivered under the
// restored default action, which would terminate the process.
TEST(StackSamplerTest, SignalPendingAtStopIsDiscardedNotFatal) {
  auto sampler = StackSampler::Create({});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  const int signal = (*sampler)->signal_number();
  sigset_t block, old_mask, pending;
  sigemptyset(&block);
  sigaddset(&block, signal);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
  siginfo_t info{};
  info.si_signo = signal;
  info.si_code = SI_TIMER;
  ASSERT_EQ(syscall(SYS_rt_tgsigqueueinfo, getpid(), Gettid(), signal, &info),
            0);
  ASSERT_EQ(sigpending(&pending), 0);
  ASSERT_TRUE(sigismember(&pending, signal));

  (*sampler)->Stop();
  ASSERT_EQ(sigpending(&pending), 0);
  EXPECT_FALSE(sigismember(&pending, signal));
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old_mask, nullptr), 0);  // alive
}

TEST(StackSamplerTest, OnlyOneSamplerIsActiveAtATime) {
  auto first = StackSampler::Create({});
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = StackSampler::Create({});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  (*first)->Stop();
  auto third = StackSampler::Create({});
  EXPECT_TRUE(third.ok()) << third.status();
  third->reset();  // destroying an active sampler stops it too
  EXPECT_TRUE(StackSampler::Create({}).ok());
}

TEST(StackSamplerTest, RejectsBadOptionsAndThreads) {
  EXPECT_EQ(StackSampler::Create({.rate_hz = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StackSampler::Create({.signal = SIGSEGV}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StackSampler::Create({.ring_samples = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);

  auto sampler = StackSampler::Create({});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  EXPECT_EQ((*sampler)->RegisterThread(0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*sampler)->RegisterThread(0x3fffffff).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*sampler)->RegisterThread(1).code(),  // init: not our thread
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*sampler)->RegisterThread(Gettid()).ok());
  EXPECT_EQ((*sampler)->RegisterThread(Gettid()).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*sampler)->registered_threads(), 1u);
  (*sampler)->UnregisterThread(Gettid());
  (*sampler)->UnregisterThread(Gettid());  // twice: ignored
  EXPECT_EQ((*sampler)->registered_threads(), 0u);
  (*sampler)->Stop();
  EXPECT_EQ((*sampler)->RegisterThread(Gettid()).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(StackSamplerTest, ThreadsExitingWhileRegisteredAreHandledSafely) {
  auto sampler = StackSampler::Create({});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  Collected collected;
  // Each thread spins until one of its own samples has been drained.
  auto spin_until_sampled = [&] {
    const pid_t self = Gettid();
    SpinUntil([&] {
      (*sampler)->Drain(collected.Sink());
      return !collected.For(self).empty();
    });
  };

  // Exits while registered, then is unregistered explicitly.
  auto first = std::make_unique<TestThread>(spin_until_sampled);
  const pid_t first_tid = first->tid();
  ASSERT_TRUE((*sampler)->RegisterThread(first_tid).ok());
  first->Start();
  first.reset();  // joined: the thread is gone
  (*sampler)->UnregisterThread(first_tid);

  // Exits while registered and is never unregistered: Drain() notices.
  auto second = std::make_unique<TestThread>(spin_until_sampled);
  const pid_t second_tid = second->tid();
  ASSERT_TRUE((*sampler)->RegisterThread(second_tid).ok());
  // Sample the main thread as well, so sampling carries on meanwhile.
  ASSERT_TRUE((*sampler)->RegisterThread(Gettid()).ok());
  second->Start();
  second.reset();
  SpinInHotFunction(20'000'000);
  (*sampler)->Drain(collected.Sink());
  EXPECT_EQ((*sampler)->registered_threads(), 1u);  // only the main thread
  (*sampler)->UnregisterThread(second_tid);         // harmless now

  EXPECT_GT(collected.For(first_tid).size(), 0u);
  EXPECT_GT(collected.For(second_tid).size(), 0u);

  // New threads (which may reuse a tid) register and are sampled normally.
  TestThread third(spin_until_sampled);
  ASSERT_TRUE((*sampler)->RegisterThread(third.tid()).ok());
  third.Start();
  third.Join();
  EXPECT_GT(collected.For(third.tid()).size(), 0u);
  EXPECT_EQ((*sampler)->dropped(), 0u);
}

// Threads registering and unregistering themselves over and over while being
// sampled and drained: the slot protocol under churn (run it under TSan).
TEST(StackSamplerTest, RegistrationChurnDuringSamplingIsSafe) {
  auto sampler = StackSampler::Create({.rate_hz = 5'000});
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  Collected collected;
  std::atomic<size_t> drained{0};
  std::atomic<bool> done{false};
  std::thread drainer([&] {
    while (!done.load()) {
      drained += (*sampler)->Drain(collected.Sink());
      absl::SleepFor(absl::Milliseconds(1));
    }
  });
  std::set<pid_t> tids;
  std::mutex tids_mu;
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&] {
      const pid_t tid = Gettid();
      {
        std::lock_guard<std::mutex> lock(tids_mu);
        tids.insert(tid);
      }
      int rounds = 0;
      const absl::Time deadline = absl::Now() + kPatience;
      while ((rounds < 20 || drained.load() == 0) && absl::Now() < deadline) {
        ASSERT_TRUE((*sampler)->RegisterThread(tid).ok());
        SpinInHotFunction(3'000'000);
        (*sampler)->UnregisterThread(tid);
        ++rounds;
      }
    });
  }
  for (auto& worker : workers) worker.join();
  done.store(true);
  drainer.join();
  (*sampler)->Drain(collected.Sink());
  std::lock_guard<std::mutex> lock(collected.mu);
  EXPECT_GT(collected.samples.size(), 0u);
  for (const Sample& sample : collected.samples) {
    EXPECT_TRUE(tids.contains(sample.tid)) << sample.tid;
  }
  EXPECT_EQ((*sampler)->registered_threads(), 0u);
}

}  // namespace
}  // namespace podscope::profiler::sampling
