#include "src/sampling/sample_ring.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::profiler::sampling {
namespace {

// Pushes one sample whose fields encode `sequence`, as the handler would.
bool Push(SampleRing& ring, uint64_t sequence) {
  StackSample* sample = ring.TryReserve();
  if (sample == nullptr) return false;
  sample->tid = 7;
  sample->monotonic_ns = static_cast<int64_t>(sequence);
  sample->weight = 1;
  sample->depth = static_cast<uint32_t>(sequence % kMaxStackDepth) + 1;
  for (uint32_t i = 0; i < sample->depth; ++i) sample->ips[i] = sequence + i;
  ring.Commit();
  return true;
}

TEST(SampleRingTest, CapacityIsRoundedUpToAPowerOfTwo) {
  EXPECT_EQ(SampleRing(0).capacity(), 1u);
  EXPECT_EQ(SampleRing(1).capacity(), 1u);
  EXPECT_EQ(SampleRing(5).capacity(), 8u);
  EXPECT_EQ(SampleRing(4096).capacity(), 4096u);
}

TEST(SampleRingTest, PopsInOrderWithTheFramesThatWerePushed) {
  SampleRing ring(8);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(Push(ring, i));
  EXPECT_EQ(ring.size(), 5u);
  StackSample out{};
  for (uint64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(ring.Pop(&out));
    EXPECT_EQ(out.monotonic_ns, static_cast<int64_t>(i));
    ASSERT_EQ(out.depth, i + 1);
    for (uint32_t f = 0; f < out.depth; ++f) EXPECT_EQ(out.ips[f], i + f);
  }
  EXPECT_FALSE(ring.Pop(&out));
  EXPECT_EQ(ring.dropped(), 0u);
}

TEST(SampleRingTest, FullRingDropsNewSamplesAndKeepsOldOnes) {
  SampleRing ring(4);
  for (uint64_t i = 0; i < 10; ++i) Push(ring, i);
  EXPECT_EQ(ring.dropped(), 6u);
  StackSample out{};
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ring.Pop(&out));
    EXPECT_EQ(out.monotonic_ns, static_cast<int64_t>(i));  // oldest kept
  }
  EXPECT_FALSE(ring.Pop(&out));
  // Space freed by the consumer is usable again.
  EXPECT_TRUE(Push(ring, 42));
  ASSERT_TRUE(ring.Pop(&out));
  EXPECT_EQ(out.monotonic_ns, 42);
}

TEST(SampleRingTest, ReservedButUncommittedSlotIsNotVisible) {
  SampleRing ring(2);
  StackSample* sample = ring.TryReserve();
  ASSERT_NE(sample, nullptr);
  sample->depth = 3;  // abandoned, e.g. the handler bailed out
  StackSample out{};
  EXPECT_FALSE(ring.Pop(&out));
  EXPECT_EQ(ring.TryReserve(), sample);  // the same slot is offered again
}

// A producer and a consumer on two threads: every sample is either popped
// exactly once, in order, with intact frames, or counted as dropped.
TEST(SampleRingTest, ConcurrentProducerAndConsumerLoseNothingUncounted) {
  SampleRing ring(64);
  constexpr uint64_t kSamples = 200'000;
  std::atomic<bool> done{false};
  uint64_t pushed = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kSamples; ++i) {
      if (Push(ring, i)) ++pushed;
    }
    done.store(true, std::memory_order_release);
  });
  uint64_t popped = 0;
  int64_t last = -1;
  bool intact = true;
  StackSample out{};
  while (true) {
    const bool finished = done.load(std::memory_order_acquire);
    while (ring.Pop(&out)) {
      ++popped;
      if (out.monotonic_ns <= last) intact = false;
      last = out.monotonic_ns;
      const auto sequence = static_cast<uint64_t>(out.monotonic_ns);
      if (out.depth != sequence % kMaxStackDepth + 1) intact = false;
      for (uint32_t f = 0; f < out.depth; ++f) {
        if (out.ips[f] != sequence + f) intact = false;
      }
    }
    if (finished) break;
  }
  producer.join();
  EXPECT_TRUE(intact);
  EXPECT_EQ(popped, pushed);
  EXPECT_EQ(pushed + ring.dropped(), kSamples);
  EXPECT_GT(popped, 0u);
}

}  // namespace
}  // namespace podscope::profiler::sampling
