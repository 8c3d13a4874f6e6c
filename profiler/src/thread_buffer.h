// Per-thread event blocks and how they travel between a recording thread
// (the owner) and the session's writer thread, without locks:
//
//   owner:  writes events into `current`, publishing `committed`; when the
//           block is full it pushes it on `full` and takes a block from its
//           private spares, else from `free` (taking the whole list), else
//           allocates one if under the budgets (per thread and for all
//           threads), else drops and counts.
//   writer: drains `current` up to `committed` as it goes; takes the whole
//           `full` list, drains each block and pushes it on `free`, or
//           frees it when the thread holds more than kKeptBlocks.
//
// Both lists are stacks whose consumer takes everything at once with an
// exchange, so no pop races with a push (no ABA). Buffers outlive their
// threads, so events of threads that exit are kept.
#ifndef PODSCOPE_PROFILER_SRC_THREAD_BUFFER_H_
#define PODSCOPE_PROFILER_SRC_THREAD_BUFFER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "podscope/profiler/trace.h"

namespace podscope::profiler::internal {

struct ThreadBuffer;

struct Block {
  static constexpr uint32_t kSlots = 2048;
  // Blocks a thread keeps for reuse; drained blocks beyond are freed, so
  // that the memory of a burst goes back once it is written.
  static constexpr uint32_t kKeptBlocks = 256;
  std::atomic<uint32_t> committed{0};
  uint32_t consumed = 0;  // writer thread only
  Block* next = nullptr;  // link in whichever list holds the block
  RawEvent slots[kSlots];
};

struct ThreadBuffer {
  pid_t tid = 0;
  std::atomic<Block*> current{nullptr};
  std::atomic<Block*> full{nullptr};
  std::atomic<Block*> free{nullptr};
  Block* spare = nullptr;  // owner only
  std::atomic<uint32_t> allocated{0};
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> exited{false};

  std::mutex name_mutex;
  std::string name;  // guarded by name_mutex
};

// The process's thread buffers and the budget new blocks come from.
class BufferRegistry {
 public:
  static BufferRegistry& Get();

  // The calling thread's buffer, created on first use.
  ThreadBuffer* ForThisThread();

  // Blocks each thread may allocate (a session sets it at start).
  void set_max_blocks_per_thread(uint32_t n) {
    max_blocks_.store(n, std::memory_order_relaxed);
  }
  uint32_t max_blocks_per_thread() const {
    return max_blocks_.load(std::memory_order_relaxed);
  }
  // Blocks all threads together may hold (a session sets it at start).
  void set_max_blocks_total(uint32_t n) {
    max_total_.store(n, std::memory_order_relaxed);
  }
  uint32_t max_blocks_total() const {
    return max_total_.load(std::memory_order_relaxed);
  }
  // Counts a new block against both budgets; false (nothing counted) when
  // either is spent. Owner thread of `buffer`.
  bool TryAllocate(ThreadBuffer* buffer);
  // Uncounts a block that was freed.
  void Freed(ThreadBuffer* buffer);

  // Calls fn for every buffer (the writer thread's view).
  void ForEach(const std::function<void(ThreadBuffer*)>& fn);

  // Frees the buffers of threads that exited, once drained (writer thread,
  // between captures).
  void ReleaseExited();

 private:
  std::mutex mutex_;
  std::vector<ThreadBuffer*> buffers_;
  std::atomic<uint32_t> max_blocks_{18432};
  std::atomic<uint32_t> max_total_{36864};
  std::atomic<uint32_t> total_{0};
};

// Slots a record takes: slices and instants carry their attachments.
inline uint32_t RecordSpan(const RawEvent& e) {
  return 1u + ((e.kind == kRecordSlice || e.kind == kRecordInstant)
                   ? e.attachments
                   : 0u);
}

// Calls fn on each record of `block` from `consumed` to `limit`.
template <typename Fn>
void DrainBlock(Block* block, uint32_t limit, Fn& fn) {
  uint32_t i = block->consumed;
  while (i < limit) {
    const RawEvent* e = &block->slots[i];
    fn(e);
    i += RecordSpan(*e);
  }
  block->consumed = i;
}

// Takes the blocks `buffer` has filled, oldest first.
Block* TakeFullBlocks(ThreadBuffer* buffer);
// Hands a drained block back to its owner thread.
void RecycleBlock(ThreadBuffer* buffer, Block* block);

// Drains what `buffer` has committed: calls fn on each event record (a
// slice or instant with its attachments following it) and recycles full
// blocks. Writer thread only.
template <typename Fn>
void DrainBuffer(ThreadBuffer* buffer, Fn&& fn) {
  for (Block* b = TakeFullBlocks(buffer); b != nullptr;) {
    Block* next = b->next;
    DrainBlock(b, b->committed.load(std::memory_order_acquire), fn);
    RecycleBlock(buffer, b);
    b = next;
  }
  if (Block* current = buffer->current.load(std::memory_order_acquire)) {
    DrainBlock(current, current->committed.load(std::memory_order_acquire), fn);
  }
}

pid_t CurrentTid();

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_THREAD_BUFFER_H_
