// The single-producer/single-consumer ring that carries stack samples from a
// thread's profiling signal handler (the producer) to the thread that drains
// them (the consumer).
//
// Protocol: `head_` and `tail_` are monotonically increasing counts; slot
// `i & mask_` holds record i. The producer owns `head_`, the consumer owns
// `tail_`. The producer fills record `head` only while `head - tail <
// capacity` (read with acquire, so the consumer is done copying that slot)
// and then publishes it with a release store of `head + 1`; the consumer
// reads `head` with acquire, copies records below it, and frees them with a
// release store of `tail`. No locks, no allocation, no read-modify-write on
// the producer's path except the drop counter: everything the handler does
// is async-signal-safe. A full ring drops the new sample and counts it,
// never blocking or overwriting samples not yet drained.
#ifndef PODSCOPE_PROFILER_SRC_SAMPLING_SAMPLE_RING_H_
#define PODSCOPE_PROFILER_SRC_SAMPLING_SAMPLE_RING_H_

#include <sys/types.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace podscope::profiler::sampling {

inline constexpr uint32_t kMaxStackDepth = 64;

// One stack sample. Deliberately without member initialisers: the ring's
// storage is then left uninitialised by its allocation, so the memory of a
// thread that is rarely sampled is never committed. Value-initialise
// (`StackSample s{};`) when creating one yourself.
struct StackSample {
  pid_t tid;             // kernel thread id of the sampled thread
  uint32_t depth;        // number of valid entries in `ips`
  int64_t monotonic_ns;  // CLOCK_MONOTONIC when the signal was handled
  // How many sampling periods this sample stands for: 1 + the timer
  // overruns the kernel reported (CPU-time timers fire at most once per
  // scheduler tick, so at high rates one signal can cover several periods).
  uint32_t weight;
  // Instruction pointers, leaf first. ips[0] is the interrupted instruction;
  // the others are return addresses (symbolise them with
  // Symbolizer::SymbolizeReturnAddress).
  uint64_t ips[kMaxStackDepth];
};

class SampleRing {
 public:
  // Capacity is `min_capacity` rounded up to a power of two (at least 1).
  explicit SampleRing(size_t min_capacity)
      : mask_(std::bit_ceil(min_capacity == 0 ? size_t{1} : min_capacity) - 1),
        records_(std::make_unique_for_overwrite<StackSample[]>(mask_ + 1)) {}
  SampleRing(const SampleRing&) = delete;
  SampleRing& operator=(const SampleRing&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // Producer: the slot for the next sample, or nullptr (and a counted drop)
  // when the ring is full. The slot is published only by Commit(); a
  // reserved slot that is not committed is reused by the next TryReserve().
  // Async-signal-safe.
  StackSample* TryReserve() {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > mask_) {
      CountDrop();
      return nullptr;
    }
    return &records_[head & mask_];
  }
  void Commit() {
    head_.store(head_.load(std::memory_order_relaxed) + 1,
                std::memory_order_release);
  }
  // A sample lost for another reason (e.g. a signal that arrived while the
  // handler was already running). Async-signal-safe.
  void CountDrop() { dropped_.fetch_add(1, std::memory_order_relaxed); }

  // Consumer: copies the oldest sample into `out` and frees its slot.
  // Returns false when the ring is empty.
  bool Pop(StackSample* out) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return false;
    const StackSample& record = records_[tail & mask_];
    // Copy only the valid frames; the rest of `out` keeps what it had.
    out->tid = record.tid;
    out->depth = record.depth <= kMaxStackDepth ? record.depth : 0;
    out->monotonic_ns = record.monotonic_ns;
    out->weight = record.weight;
    for (uint32_t i = 0; i < out->depth; ++i) out->ips[i] = record.ips[i];
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Samples waiting to be drained (exact when called by the consumer).
  size_t size() const {
    return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                               tail_.load(std::memory_order_acquire));
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  static_assert(std::atomic<uint64_t>::is_always_lock_free,
                "the signal handler needs lock-free 64-bit atomics");

  const uint64_t mask_;
  const std::unique_ptr<StackSample[]> records_;
  // On separate cache lines: the producer and consumer run on different
  // cores and would otherwise invalidate each other's line on every sample.
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) std::atomic<uint64_t> dropped_{0};
};

}  // namespace podscope::profiler::sampling

#endif  // PODSCOPE_PROFILER_SRC_SAMPLING_SAMPLE_RING_H_
