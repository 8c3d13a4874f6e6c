// ParallelFor: every item exactly once, on the threads it promises.
#include "podscope/base/parallel.h"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

TEST(ParallelFor, EveryItemExactlyOnce) {
  for (int threads : {0, 1, 2, 3, 8}) {
    for (size_t n :
         {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
      std::vector<std::atomic<int>> calls(n);
      ParallelFor(threads, n, [&](size_t i) { calls[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(calls[i].load(), 1)
            << "item " << i << " of " << n << " on " << threads << " threads";
      }
    }
  }
}

TEST(ParallelFor, OneThreadRunsInOrderOnTheCaller) {
  std::vector<size_t> order;
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  ParallelFor(1, 50, [&](size_t i) {
    order.push_back(i);
    elsewhere |= std::this_thread::get_id() != caller;
  });
  ASSERT_EQ(order.size(), 50u);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
  EXPECT_FALSE(elsewhere);
}

TEST(ParallelFor, ItemsRunConcurrently) {
  // Each item waits until the other has started: this only finishes if two
  // threads run at once (one being the caller).
  std::atomic<int> started{0};
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<bool> timed_out{false};
  ParallelFor(2, 2, [&](size_t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    }
    started.fetch_add(1);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_FALSE(timed_out) << "the two items never overlapped";
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_TRUE(ids.count(std::this_thread::get_id())) << "caller takes part";
}

TEST(ParallelFor, NeverMoreThreadsThanItemsOrRequested) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  ParallelFor(16, 3, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_LE(ids.size(), 3u);
  ids.clear();
  ParallelFor(2, 100, [&](size_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_LE(ids.size(), 2u);
}

TEST(ThreadCount, ZeroMeansEveryCore) {
  EXPECT_GE(HardwareThreads(), 1);
  EXPECT_EQ(ThreadCount(0), HardwareThreads());
  EXPECT_EQ(ThreadCount(-3), HardwareThreads());
  EXPECT_EQ(ThreadCount(5), 5);
}

// Each call knows its thread: one worker index per thread, the caller's 0,
// fewer than WorkerCount, so that per-thread buffers are never shared.
TEST(ParallelFor, WorkersNameTheirThreads) {
  for (int threads : {1, 2, 4}) {
    const size_t n = 200;
    ASSERT_EQ(WorkerCount(threads, n), static_cast<size_t>(threads));
    ASSERT_EQ(WorkerCount(threads, 1), 1u);
    std::mutex mu;
    std::map<size_t, std::set<std::thread::id>> threads_of;
    std::vector<std::atomic<int>> calls(n);
    ParallelForWorkers(threads, n, [&](size_t worker, size_t i) {
      calls[i].fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      std::lock_guard<std::mutex> lock(mu);
      threads_of[worker].insert(std::this_thread::get_id());
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(calls[i].load(), 1);
    for (const auto& [worker, ids] : threads_of) {
      EXPECT_LT(worker, WorkerCount(threads, n));
      EXPECT_EQ(ids.size(), 1u) << "worker " << worker << " ran on two threads";
    }
    // The caller is worker 0 (helpers may, in principle, take every item).
    if (threads == 1) {
      ASSERT_TRUE(threads_of.count(0));
    }
    if (threads_of.count(0)) {
      EXPECT_EQ(*threads_of[0].begin(), std::this_thread::get_id());
    }
  }
}

}  // namespace
}  // namespace podscope::base
