// Thread buffers on their own, with the test playing the session's writer:
// a burst's blocks come back to their thread and are reused, budgets bound
// what the threads hold with drops counted, and the default budgets hold
// 256 MiB at most.
#include "src/thread_buffer.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/base/sanitizers.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"

namespace podscope::profiler::internal {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

// Records `n` scopes on the calling thread.
void Record(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    PODSCOPE_TRACE("burst");
  }
}

// Records `n` scopes; the page faults the calling thread took meanwhile.
long FaultsRecording(int64_t n) {
  rusage before, after;
  getrusage(RUSAGE_THREAD, &before);
  Record(n);
  getrusage(RUSAGE_THREAD, &after);
  return after.ru_minflt - before.ru_minflt;
}

// Records while the test's budgets are in force, then restores the
// registry as a session would leave it.
// Two threads taking turns: each waits for the stage the other sets.
class Turns {
 public:
  void Set(int stage) {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = stage;
    cv_.notify_all();
  }
  void WaitFor(int stage) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return stage_ == stage; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int stage_ = 0;
};

// A dozen faults per block allocated on the recording thread; fewer means
// it allocated none. Under a sanitizer, its shadow of the pages written
// faults in on the writing thread whatever the blocks.
void ExpectNoBlockFaultedIn(long faults) {
#if !PODSCOPE_ASAN && !PODSCOPE_TSAN
  EXPECT_LT(faults, 12) << "the recording thread faulted its blocks in";
#else
  (void)faults;
#endif
}

class ThreadBufferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BufferRegistry& registry = BufferRegistry::Get();
    registry.set_max_blocks_per_thread(kPerThread);
    registry.set_max_blocks_total(kPerThread * 4);
    g_level.store(static_cast<int>(Level::kInfo), std::memory_order_release);
  }
  void TearDown() override {
    g_level.store(0, std::memory_order_release);
    BufferRegistry& registry = BufferRegistry::Get();
    registry.set_max_blocks_per_thread(kDefaultMaxBlocksPerThread);
    registry.set_max_blocks_total(kDefaultMaxBlocksTotal);
  }

  // More than a thread keeps between sessions, so that freeing drained
  // blocks past Block::kKeptBlocks would show.
  static constexpr uint32_t kPerThread = Block::kKeptBlocks + 64;
};

// One thread records bursts; another drains as the session's writer does.
// The second burst finds every block of the first back in its pool: it
// allocates none, and the thread's memory does not grow. A session's end
// then gives back what is held beyond Block::kKeptBlocks.
TEST_F(ThreadBufferTest, ASecondBurstReusesTheDrainedBlocksOfTheFirst) {
  constexpr int64_t kBurst = int64_t{Block::kKeptBlocks + 32} * Block::kSlots;
  std::mutex mutex;
  std::condition_variable cv;
  int bursts_recorded = 0, bursts_drained = 0;
  ThreadBuffer* buffer = nullptr;
  uint32_t held_after_first = 0, held_after_second = 0;
  uint64_t dropped = 0;
  std::thread recorder([&] {
    buffer = BufferRegistry::Get().ForThisThread();
    for (int burst = 1; burst <= 2; ++burst) {
      Record(kBurst);
      std::unique_lock<std::mutex> lock(mutex);
      bursts_recorded = burst;
      cv.notify_all();
      cv.wait(lock, [&] { return bursts_drained == burst; });
      if (burst == 1) {
        held_after_first = buffer->allocated.load(std::memory_order_relaxed);
      }
    }
    held_after_second = buffer->allocated.load(std::memory_order_relaxed);
    dropped = buffer->dropped.load(std::memory_order_relaxed);
  });
  uint64_t events = 0;
  for (int burst = 1; burst <= 2; ++burst) {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return bursts_recorded == burst; });
    DrainBuffer(buffer, [&](const RawEvent*) { ++events; });
    bursts_drained = burst;
    cv.notify_all();
  }
  recorder.join();
  EXPECT_EQ(events, 2 * static_cast<uint64_t>(kBurst));
  EXPECT_EQ(dropped, 0u);
  // The first burst's blocks stayed with the thread once drained.
  EXPECT_GE(held_after_first, Block::kKeptBlocks + 32);
  // The block the first burst ended in was still the current one while it
  // was drained, so the second burst may need one more; no more than that.
  EXPECT_LE(held_after_second, held_after_first + 1)
      << "the second burst allocated blocks instead of reusing its pool";

  BufferRegistry::Get().TrimPools();
  EXPECT_LE(buffer->allocated.load(std::memory_order_relaxed),
            Block::kKeptBlocks + 1);  // kept, plus the current block
}

// A burst that outruns the writer makes its thread allocate blocks itself,
// each a dozen page faults on the recording thread. The writer's next pass
// gives the thread twice as many blocks with their pages already touched,
// within the budget: the burst goes on into them without allocating and
// without faulting.
TEST_F(ThreadBufferTest, TheWriterFaultsInTheBlocksABurstWillNeed) {
  constexpr uint32_t kDrawn = 24;
  ThreadBuffer* buffer = nullptr;
  Turns turns;
  uint32_t drawn_before_refill = 0, drawn_after = 0;
  long faults = -1;
  std::thread recorder([&] {
    buffer = BufferRegistry::Get().ForThisThread();
    // Fill the current block and kDrawn more, all allocated here.
    Record(int64_t{kDrawn + 1} * Block::kSlots);
    drawn_before_refill = buffer->drawn.load(std::memory_order_relaxed);
    turns.Set(1);
    turns.WaitFor(2);
    faults = FaultsRecording(int64_t{2 * kDrawn} * Block::kSlots);
    drawn_after = buffer->drawn.load(std::memory_order_relaxed);
  });
  turns.WaitFor(1);
  BufferRegistry::Get().Refill();  // the writer's pass, draining nothing
  turns.Set(2);
  recorder.join();
  EXPECT_GE(drawn_before_refill, kDrawn);
  EXPECT_EQ(drawn_after, 0u) << "the burst allocated blocks itself";
  ExpectNoBlockFaultedIn(faults);
  EXPECT_LE(buffer->allocated.load(std::memory_order_relaxed), kPerThread);
  uint64_t events = 0;
  DrainBuffer(buffer, [&](const RawEvent*) { ++events; });
  EXPECT_EQ(events, uint64_t{3 * kDrawn + 1} * Block::kSlots);
  EXPECT_EQ(buffer->dropped.load(std::memory_order_relaxed), 0u);
}

// The writer stocks a thread ahead of its need: after a thread started
// blocks at some rate, the next refill leaves it what it fills in
// Block::kStockAheadNs at that rate, pages mapped, and the thread records
// on into them without allocating a block or faulting a page in.
TEST_F(ThreadBufferTest, TheWriterStocksAThreadForTheRateItRecordsAt) {
  constexpr uint32_t kStarted = 20;
  ThreadBuffer* buffer = nullptr;
  Turns turns;
  uint32_t stocked = 0, drawn_after = 0;
  long faults = -1;
  std::thread recorder([&] {
    buffer = BufferRegistry::Get().ForThisThread();
    turns.Set(1);
    turns.WaitFor(2);
    Record(int64_t{kStarted} * Block::kSlots);
    turns.Set(3);
    turns.WaitFor(4);
    // What the refill stocked, minus the current block's remainder.
    faults = FaultsRecording(int64_t{stocked} * Block::kSlots);
    drawn_after = buffer->drawn.load(std::memory_order_relaxed);
  });
  turns.WaitFor(1);
  // The first look: from here the thread's rate is measured.
  const auto first = std::chrono::steady_clock::now();
  BufferRegistry::Get().Refill();
  turns.Set(2);
  turns.WaitFor(3);
  BufferRegistry::Get().Refill();
  const double elapsed_ns = std::max(
      1e6,
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - first)
                              .count()));
  // The thread started kStarted blocks within elapsed_ns (at most): the
  // stock covers at least as many for the next kStockAheadNs, or twice
  // what the thread allocated itself, within the caps.
  const uint32_t stock = buffer->given.load(std::memory_order_relaxed) -
                         buffer->from_stock.load(std::memory_order_relaxed);
  const double ahead = kStarted * (Block::kStockAheadNs / elapsed_ns);
  const uint32_t at_least = static_cast<uint32_t>(
      std::min<double>({ahead, static_cast<double>(Block::kRefillBlocks),
                        static_cast<double>(kPerThread - kStarted - 2)}));
  EXPECT_GE(stock, at_least);
  EXPECT_GE(stock, 2 * kStarted) << "twice what the thread drew itself";
  stocked = stock - 1;
  turns.Set(4);
  recorder.join();
  EXPECT_EQ(drawn_after, 0u) << "the thread allocated blocks itself";
  ExpectNoBlockFaultedIn(faults);
  uint64_t events = 0;
  DrainBuffer(buffer, [&](const RawEvent*) { ++events; });
  EXPECT_EQ(events, uint64_t{kStarted + stocked} * Block::kSlots);
  EXPECT_EQ(buffer->dropped.load(std::memory_order_relaxed), 0u);
}

// Refilling never takes a thread past its budget, and gives nothing to a
// thread that has exited.
TEST_F(ThreadBufferTest, RefillStaysWithinTheBudget) {
  ThreadBuffer* buffer = nullptr;
  std::mutex mutex;
  std::condition_variable cv;
  bool recorded = false, refilled = false;
  std::thread recorder([&] {
    buffer = BufferRegistry::Get().ForThisThread();
    Record(int64_t{kPerThread - 8} * Block::kSlots);
    std::unique_lock<std::mutex> lock(mutex);
    recorded = true;
    cv.notify_all();
    cv.wait(lock, [&] { return refilled; });
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return recorded; });
    BufferRegistry::Get().Refill();
    refilled = true;
    cv.notify_all();
  }
  recorder.join();
  EXPECT_EQ(buffer->allocated.load(std::memory_order_relaxed), kPerThread);
  EXPECT_LE(BufferRegistry::Get().blocks_total(),
            BufferRegistry::Get().max_blocks_total());
  // Exited: no more blocks, whatever it drew.
  buffer->drawn.store(100, std::memory_order_relaxed);
  const uint32_t total = BufferRegistry::Get().blocks_total();
  BufferRegistry::Get().Refill();
  EXPECT_EQ(BufferRegistry::Get().blocks_total(), total);
  DrainBuffer(buffer, [](const RawEvent*) {});
}

// With no writer to hand blocks back, a thread fills its budget and drops
// the rest, counted exactly and without waiting; once its blocks are
// drained it records again into them.
TEST_F(ThreadBufferTest, AtTheLimitEventsAreDroppedAndCounted) {
  constexpr int64_t kOver = 1000;
  ThreadBuffer* buffer = nullptr;
  uint32_t held = 0;
  uint64_t dropped = 0;
  std::thread first([&] {
    buffer = BufferRegistry::Get().ForThisThread();
    Record(int64_t{kPerThread} * Block::kSlots + kOver);
    held = buffer->allocated.load(std::memory_order_relaxed);
    dropped = buffer->dropped.load(std::memory_order_relaxed);
  });
  first.join();
  EXPECT_EQ(held, kPerThread);
  EXPECT_EQ(dropped, static_cast<uint64_t>(kOver));
  uint64_t events = 0;
  DrainBuffer(buffer, [&](const RawEvent*) { ++events; });
  EXPECT_EQ(events, uint64_t{kPerThread} * Block::kSlots);
  EXPECT_EQ(buffer->allocated.load(std::memory_order_relaxed), kPerThread);
}

// The writer drains while the thread records, as in a session: every event
// is either collected or counted as dropped, the thread never holds more
// than its budget, and a session's start and end (pre-faulting, trimming)
// may run meanwhile.
TEST_F(ThreadBufferTest, DrainingWhileRecordingKeepsOrCountsEveryEvent) {
  constexpr uint32_t kBudget = 16;
  constexpr int64_t kEvents = 2'000'000;  // about 60 times the budget
  BufferRegistry::Get().set_max_blocks_per_thread(kBudget);
  std::atomic<ThreadBuffer*> buffer{nullptr};
  std::atomic<bool> done{false};
  uint64_t dropped = 0;
  std::thread recorder([&] {
    ThreadBuffer* mine = BufferRegistry::Get().ForThisThread();
    buffer.store(mine, std::memory_order_release);
    Record(kEvents);
    dropped = mine->dropped.load(std::memory_order_relaxed);
    done.store(true, std::memory_order_release);
  });
  uint64_t events = 0;
  ThreadBuffer* b = nullptr;
  while ((b = buffer.load(std::memory_order_acquire)) == nullptr) {
    std::this_thread::yield();
  }
  uint32_t most_held = 0;
  for (int pass = 0; !done.load(std::memory_order_acquire); ++pass) {
    DrainBuffer(b, [&](const RawEvent*) { ++events; });
    if (pass % 64 == 0) BufferRegistry::Get().Prefault();
    if (pass % 64 == 32) BufferRegistry::Get().TrimPools();
    most_held =
        std::max(most_held, b->allocated.load(std::memory_order_relaxed));
  }
  recorder.join();
  DrainBuffer(b, [&](const RawEvent*) { ++events; });
  EXPECT_EQ(events + dropped, static_cast<uint64_t>(kEvents));
  EXPECT_LE(most_held, kBudget);
}

// The defaults hold at most 256 MiB of events for all threads together,
// and one thread may not take all of it.
TEST(ThreadBufferDefaults, BoundAllThreadsTo256MiB) {
  const TraceOptions defaults;
  EXPECT_LE(uint64_t{defaults.max_blocks_total} * Block::kBytes, 256 * kMiB);
  EXPECT_LT(defaults.max_blocks_per_thread, defaults.max_blocks_total);
  // Before any session the registry holds the same budgets.
  EXPECT_EQ(defaults.max_blocks_per_thread, kDefaultMaxBlocksPerThread);
  EXPECT_EQ(defaults.max_blocks_total, kDefaultMaxBlocksTotal);
}

}  // namespace
}  // namespace podscope::profiler::internal
