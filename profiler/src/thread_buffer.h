// Per-thread event blocks and how they travel between a recording thread
// (the owner) and the session's writer thread, without locks:
//
//   owner:  writes events into `current`, publishing `committed`; when the
//           block is full it pushes it on `full` and takes a block from its
//           private spares, else from `free` (taking the whole list), else
//           allocates one if under the budgets (per thread and for all
//           threads), else drops and counts.
//   writer: drains `current` up to `committed` as it goes; takes the whole
//           `full` list, drains each block and pushes it on `free`.
//
// While a session records, a block once allocated stays in its thread's
// pool: a burst reuses the blocks the writer hands back rather than
// freeing them and faulting fresh pages in. When the writer falls behind,
// it also gives each recording thread fresh blocks ahead of need, their
// pages already mapped (Refill): enough for the next few milliseconds at
// the rate the thread has been filling blocks. A page fault on the
// recording thread costs it about 9 us per 4 KiB on the virtual machines
// this runs on, a third of a cold burst's time when it faulted its own
// blocks in; blocks come from 2 MiB chunks (block_arena.h). When the session
// stops, each pool is trimmed back to kKeptBlocks. Blocks are not zeroed: every
// slot is written before its count is committed.
//
// Both lists are stacks whose consumer takes everything at once with an
// exchange, so no pop races with a push (no ABA). What one side writes for
// every event or block (the owner's committed count, the writer's drain
// position, each list head) sits on a cache line of its own. Buffers
// outlive their threads, so events of threads that exit are kept.
#ifndef PODSCOPE_PROFILER_SRC_THREAD_BUFFER_H_
#define PODSCOPE_PROFILER_SRC_THREAD_BUFFER_H_

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "podscope/profiler/trace.h"

namespace podscope::profiler::internal {

struct ThreadBuffer;

// The budgets before any session, in blocks, the same as TraceOptions'
// defaults: 240 MiB for one thread,
// 256 MiB for all threads together.
inline constexpr uint32_t kDefaultMaxBlocksPerThread = 5120;
inline constexpr uint32_t kDefaultMaxBlocksTotal = 5461;

inline constexpr size_t kCacheLine = 64;

struct Block {
  static constexpr uint32_t kSlots = 2048;
  static constexpr size_t kBytes = kSlots * sizeof(RawEvent);  // 48 KiB
  // Blocks a thread keeps for reuse between sessions; a stopping session
  // frees the ones beyond, so that the memory of a burst goes back.
  static constexpr uint32_t kKeptBlocks = 256;
  // Blocks a session start gives each recording thread, their pages
  // touched, so that the first milliseconds of a burst take no page fault.
  static constexpr uint32_t kPrefaultBlocks = 64;
  // The most blocks Refill keeps in a thread's stock (12 MiB).
  static constexpr uint32_t kRefillBlocks = 256;
  // Refill keeps in a thread's stock what the thread fills in this long at
  // the rate it has been filling blocks.
  static constexpr int64_t kStockAheadNs = 6'000'000;
  // Written by the owner for every event.
  alignas(kCacheLine) std::atomic<uint32_t> committed{0};
  // Written by the writer as it drains.
  alignas(kCacheLine) uint32_t consumed = 0;
  Block* next = nullptr;  // link in whichever list holds the block
  // Left uninitialised: a slot is written before the count covering it is
  // committed.
  alignas(kCacheLine) RawEvent slots[kSlots];
};

struct ThreadBuffer {
  pid_t tid = 0;
  std::atomic<Block*> current{nullptr};
  Block* spare = nullptr;  // owner only
  std::atomic<uint64_t> dropped{0};
  std::atomic<bool> exited{false};
  alignas(kCacheLine) std::atomic<Block*> full{nullptr};
  alignas(kCacheLine) std::atomic<Block*> free{nullptr};
  // Blocks this thread holds (in any list or current).
  alignas(kCacheLine) std::atomic<uint32_t> allocated{0};
  // Blocks the owner had to allocate itself since the writer last looked:
  // it outruns what the writer recycles (BufferRegistry::Refill).
  std::atomic<uint32_t> drawn{0};
  // Blocks the owner took from its stock (`free` and its spares), ever.
  std::atomic<uint32_t> from_stock{0};
  // The writer's side: blocks put on `free` (recycled or fresh), ever, less
  // those taken back off it; and what Refill saw at its last look.
  alignas(kCacheLine) std::atomic<uint32_t> given{0};
  uint32_t seen_from_stock = 0;
  int64_t seen_at_ns = 0;

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
  // Blocks all threads hold now.
  uint32_t blocks_total() const {
    return total_.load(std::memory_order_relaxed);
  }

  // Gives each live thread up to Block::kPrefaultBlocks blocks with their
  // pages touched, within the budgets and using at most a quarter of the
  // total (a session's start).
  void Prefault();
  // Tops up each live thread's stock with fresh blocks, their pages
  // touched, within the budgets: to what the thread fills in
  // Block::kStockAheadNs at the rate it filled blocks since the last call,
  // and at least twice what it allocated itself meanwhile (at most
  // Block::kRefillBlocks). A burst that outruns the writer then takes its
  // fresh blocks without a page fault on the recording thread. The
  // writer's thread, holding BufferDrainMutex(): at each drain pass, and
  // every millisecond while a pass drains (RefillIfDue).
  void Refill();
  void RefillIfDue();

  // While a session records, a thread of its own ("podscope-stock") keeps
  // a pool of blocks with their pages mapped, so that neither the writer
  // (collecting events) nor a recording thread spends its time on the
  // kernel's page faults: Refill hands the threads blocks from the pool
  // and asks for what they will need next; a thread whose stock ran out
  // takes one from the pool before allocating one itself. Pool blocks
  // count against max_blocks_total. Without the stocking thread (no
  // session), Refill maps the blocks' pages itself.
  void StartStocking();
  void StopStocking();
  // A block from the pool for `buffer`'s owner, within its budget;
  // nullptr when the pool is empty or busy (never waits).
  Block* TakeWarmBlock(ThreadBuffer* buffer);
  // Frees the drained blocks a thread holds beyond Block::kKeptBlocks (a
  // session's end, after its last drain).
  void TrimPools();

  // Calls fn for every buffer (the writer thread's view).
  void ForEach(const std::function<void(ThreadBuffer*)>& fn);

  // Frees the buffers of threads that exited, once drained (writer thread,
  // between captures, holding BufferDrainMutex()); returns their addresses
  // for the drainers that outlive the call to forget.
  std::vector<ThreadBuffer*> ReleaseExited();

 private:
  std::mutex mutex_;
  std::vector<ThreadBuffer*> buffers_;
  std::atomic<uint32_t> max_blocks_{kDefaultMaxBlocksPerThread};
  std::atomic<uint32_t> max_total_{kDefaultMaxBlocksTotal};
  std::atomic<uint32_t> total_{0};
  std::atomic<int64_t> refilled_at_ns_{0};

  void StockLoop();
  // Gives `buffer` a block from the pool (its pages mapped), counted
  // against its budget; false when there is none or the budget is spent.
  bool GiveWarmBlock(ThreadBuffer* buffer);
  // A block off the pool within `buffer`'s budget, counted against it;
  // nullptr when there is none or the budget is spent. Holding pool_mutex_.
  Block* PopWarmBlock(ThreadBuffer* buffer);
  // Counts one more block against max_blocks_total; false when spent.
  bool ReserveTotal();

  std::mutex pool_mutex_;
  std::condition_variable pool_cv_;
  std::vector<Block*> warm_;  // guarded by pool_mutex_
  uint32_t warm_target_ = 0;  // guarded by pool_mutex_
  bool stocking_ = false;     // guarded by pool_mutex_
  std::atomic<bool> stocking_live_{false};
  std::thread stocker_;  // started and joined under lifecycle_mutex_
  std::mutex lifecycle_mutex_;
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
    BufferRegistry::Get().RefillIfDue();
    b = next;
  }
  if (Block* current = buffer->current.load(std::memory_order_acquire)) {
    DrainBlock(current, current->committed.load(std::memory_order_acquire), fn);
  }
}

pid_t CurrentTid();

// The drain thread's bell. While the threads record nothing, the session's
// drain thread sleeps until its next flush instead of waking every few
// milliseconds; a thread that fills a block meanwhile rings it, once, so
// that its blocks come back as fast as when the drain polls. Listen() arms
// the bell for `wake` (called at most once per Listen, from a recording
// thread's slow path: it must only notify); Ring() is that slow path's
// check; Silence() disarms it and returns once no ring is in progress, so
// that `wake`'s owner may go away.
// `owner` tells sessions apart: one that is stopping does not silence the
// bell for the next.
void ListenForDrainBell(const void* owner, std::function<void()> wake);
void SilenceDrainBell(const void* owner);
void RingDrainBellSlow();
extern std::atomic<bool> g_drain_bell_armed;
inline void RingDrainBell() {
  if (__builtin_expect(g_drain_bell_armed.load(std::memory_order_relaxed),
                       false)) {
    RingDrainBellSlow();
  }
}

// Held by whoever drains the threads' buffers or frees them: one drainer
// at a time, whether a session's or the flight recorder's.
std::mutex& BufferDrainMutex();

// Sessions whose writer threads drain the buffers now; the flight recorder
// drains them itself only while there is none. Changed and read under
// BufferDrainMutex().
int& SessionsDraining();

// What the process records at: the larger of the running session's level
// and the flight recorder's (0: that one is off); g_level follows.
void SetSessionLevel(int level);
void SetRecorderLevel(int level);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_THREAD_BUFFER_H_
