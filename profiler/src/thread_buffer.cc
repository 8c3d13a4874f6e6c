#include "src/thread_buffer.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <new>

#include "absl/container/flat_hash_map.h"
#include "src/block_arena.h"
#include "src/sampling_collector.h"
#include "src/string_registry.h"

namespace podscope::profiler {
namespace internal {

std::atomic<int> g_level{0};
thread_local constinit ThreadCursor t_cursor
    __attribute__((tls_model("initial-exec")));

namespace {

// Set once the thread's buffer was handed back at thread exit: events from
// later thread-exit code are dropped rather than written into a buffer the
// writer may release.
thread_local bool t_exited = false;

// Owns the thread's buffer pointer; marks the buffer exited when the
// thread ends so the writer can release it after draining.
struct ThreadOwner {
  ThreadBuffer* buffer = nullptr;
  ~ThreadOwner() {
    t_exited = true;
    t_cursor = ThreadCursor();
    if (buffer != nullptr) {
      buffer->exited.store(true, std::memory_order_release);
    }
  }
};
thread_local ThreadOwner t_owner;

BlockArena& Arena() {
  // Free chunks kept for the next burst: as many as the default budget
  // for all threads holds.
  static auto* arena = new BlockArena(
      sizeof(Block),
      size_t{kDefaultMaxBlocksTotal} * sizeof(Block) / BlockArena::kChunkBytes);
  return *arena;
}

// A block from the arena; with `populated`, its pages mapped (the writer's
// side, ahead of need). nullptr when the system has no memory.
Block* NewBlock(bool populated) {
  void* memory = Arena().Allocate(populated);
  return memory == nullptr ? nullptr : new (memory) Block;
}

// A new block counted against `buffer`'s budget and the total; nullptr,
// and nothing counted, when a budget or the system's memory is spent.
Block* NewCountedBlock(ThreadBuffer* buffer, bool populated) {
  if (!BufferRegistry::Get().TryAllocate(buffer)) return nullptr;
  Block* block = NewBlock(populated);
  if (block == nullptr) BufferRegistry::Get().Freed(buffer);
  return block;
}

void DeleteBlock(Block* block) {
  block->~Block();
  Arena().Free(block);
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Push(std::atomic<Block*>* list, Block* block) {
  Block* head = list->load(std::memory_order_relaxed);
  do {
    block->next = head;
  } while (!list->compare_exchange_weak(head, block, std::memory_order_release,
                                        std::memory_order_relaxed));
}

// Points the cursor at `block` and publishes it as the current block.
void Install(ThreadBuffer* buffer, Block* block) {
  t_cursor.next = block->slots;
  t_cursor.end = block->slots + Block::kSlots;
  t_cursor.committed = &block->committed;
  t_cursor.index = 0;
  buffer->current.store(block, std::memory_order_release);
}

Block* NextBlock(ThreadBuffer* buffer) {
  // A plain load first: while the thread drops (every block waiting for
  // the writer), an exchange per event would pull the list's cache line
  // from the writer's core each time.
  if (buffer->spare == nullptr &&
      buffer->free.load(std::memory_order_relaxed) != nullptr) {
    buffer->spare = buffer->free.exchange(nullptr, std::memory_order_acquire);
  }
  if (buffer->spare != nullptr) {
    Block* b = buffer->spare;
    buffer->spare = b->next;
    b->next = nullptr;
    // The owner is the only writer of its count: no read-modify-write.
    buffer->from_stock.store(
        buffer->from_stock.load(std::memory_order_relaxed) + 1,
        std::memory_order_relaxed);
    return b;
  }
  // Out of stock: a block the stocking thread mapped, else one of its own.
  if (Block* b = BufferRegistry::Get().TakeWarmBlock(buffer)) {
    buffer->drawn.fetch_add(1, std::memory_order_relaxed);
    return b;
  }
  if (Block* b = NewCountedBlock(buffer, /*populated=*/false)) {
    buffer->drawn.fetch_add(1, std::memory_order_relaxed);
    return b;
  }
  return nullptr;
}

// Puts a fresh block, its pages mapped, on the thread's stock; false when
// a budget or the system's memory is spent.
bool StockFreshBlock(ThreadBuffer* buffer, bool populated) {
  Block* block = NewCountedBlock(buffer, populated);
  if (block == nullptr) return false;
  buffer->given.fetch_add(1, std::memory_order_relaxed);
  Push(&buffer->free, block);
  return true;
}

// Frees a list of blocks; how many there were.
uint32_t FreeList(Block* b) {
  uint32_t n = 0;
  while (b != nullptr) {
    Block* next = b->next;
    DeleteBlock(b);
    b = next;
    ++n;
  }
  return n;
}

}  // namespace

pid_t CurrentTid() {
  thread_local pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  return tid;
}

BufferRegistry& BufferRegistry::Get() {
  static auto* registry = new BufferRegistry();
  return *registry;
}

ThreadBuffer* BufferRegistry::ForThisThread() {
  if (t_owner.buffer != nullptr) return t_owner.buffer;
  // A buffer for a thread past its own exit would never be released.
  if (t_exited) return nullptr;
  auto* buffer = new ThreadBuffer();
  buffer->tid = CurrentTid();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_.push_back(buffer);
  }
  t_owner.buffer = buffer;
  SamplingCollector::RegisterWithActive(buffer->tid);
  return buffer;
}

bool BufferRegistry::TryAllocate(ThreadBuffer* buffer) {
  if (buffer->allocated.load(std::memory_order_relaxed) >=
      max_blocks_per_thread()) {
    return false;
  }
  if (!ReserveTotal()) return false;
  buffer->allocated.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool BufferRegistry::ReserveTotal() {
  // Other owners allocate concurrently: reserve first, then check.
  if (total_.fetch_add(1, std::memory_order_relaxed) >= max_blocks_total()) {
    total_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void BufferRegistry::Freed(ThreadBuffer* buffer) {
  buffer->allocated.fetch_sub(1, std::memory_order_relaxed);
  total_.fetch_sub(1, std::memory_order_relaxed);
}

void BufferRegistry::Prefault() {
  const uint32_t reserve = max_blocks_total() / 4;
  ForEach([&](ThreadBuffer* buffer) {
    if (buffer->exited.load(std::memory_order_acquire)) return;
    while (buffer->allocated.load(std::memory_order_relaxed) <
               Block::kPrefaultBlocks &&
           total_.load(std::memory_order_relaxed) < reserve &&
           StockFreshBlock(buffer, true)) {
    }
  });
}

void BufferRegistry::Refill() {
  const int64_t now = SteadyNs();
  refilled_at_ns_.store(now, std::memory_order_relaxed);
  uint64_t pool_want = 0;
  ForEach([&](ThreadBuffer* buffer) {
    if (buffer->exited.load(std::memory_order_acquire)) return;
    const uint32_t drawn = buffer->drawn.exchange(0, std::memory_order_relaxed);
    const uint32_t taken = buffer->from_stock.load(std::memory_order_relaxed);
    // Blocks the thread started since the last look, and over how long (a
    // first look counts as one horizon).
    const uint64_t started = (taken - buffer->seen_from_stock) + drawn;
    const int64_t elapsed =
        buffer->seen_at_ns == 0
            ? Block::kStockAheadNs
            : std::max<int64_t>(now - buffer->seen_at_ns, 1'000'000);
    buffer->seen_from_stock = taken;
    buffer->seen_at_ns = now;
    const uint64_t ahead =
        (started * Block::kStockAheadNs + elapsed - 1) / elapsed;
    const auto want = static_cast<uint32_t>(std::min<uint64_t>(
        std::max<uint64_t>(ahead, 2 * uint64_t{drawn}), Block::kRefillBlocks));
    // What the stock holds: given to it, less what the owner took (the
    // owner counts a block only once it took it, after it was given).
    int64_t stock = static_cast<int32_t>(
        buffer->given.load(std::memory_order_relaxed) - taken);
    const bool stocker = stocking_live_.load(std::memory_order_acquire);
    while (stock < int64_t{want} &&
           (stocker ? GiveWarmBlock(buffer) : StockFreshBlock(buffer, true))) {
      ++stock;
    }
    pool_want += want;
  });
  // What the threads will start next: the stocking thread maps it ahead.
  if (stocking_live_.load(std::memory_order_acquire)) {
    bool short_of_target = false;
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      warm_target_ = static_cast<uint32_t>(
          std::min<uint64_t>(pool_want, 2 * uint64_t{Block::kRefillBlocks}));
      short_of_target = warm_.size() < warm_target_;
    }
    // Woken only when there is work: a session recording a few events
    // between long steps never wakes it.
    if (short_of_target) pool_cv_.notify_one();
  }
}

Block* BufferRegistry::PopWarmBlock(ThreadBuffer* buffer) {
  if (warm_.empty() || buffer->allocated.load(std::memory_order_relaxed) >=
                           max_blocks_per_thread()) {
    return nullptr;
  }
  Block* block = warm_.back();
  warm_.pop_back();
  // Counted against the budget for all threads since it was mapped.
  buffer->allocated.fetch_add(1, std::memory_order_relaxed);
  return block;
}

bool BufferRegistry::GiveWarmBlock(ThreadBuffer* buffer) {
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    block = PopWarmBlock(buffer);
  }
  if (block == nullptr) return false;
  buffer->given.fetch_add(1, std::memory_order_relaxed);
  Push(&buffer->free, block);
  return true;
}

Block* BufferRegistry::TakeWarmBlock(ThreadBuffer* buffer) {
  if (!stocking_live_.load(std::memory_order_relaxed)) return nullptr;
  std::unique_lock<std::mutex> lock(pool_mutex_, std::try_to_lock);
  return lock.owns_lock() ? PopWarmBlock(buffer) : nullptr;
}

void BufferRegistry::StartStocking() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mutex_);
  if (stocker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    stocking_ = true;
    warm_target_ = 0;
  }
  stocking_live_.store(true, std::memory_order_release);
  stocker_ = std::thread([this] { StockLoop(); });
}

void BufferRegistry::StopStocking() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mutex_);
  if (!stocker_.joinable()) return;
  stocking_live_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    stocking_ = false;
  }
  pool_cv_.notify_all();
  stocker_.join();
  std::vector<Block*> left;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    left.swap(warm_);
  }
  for (Block* b : left) {
    DeleteBlock(b);
    total_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void BufferRegistry::StockLoop() {
  pthread_setname_np(pthread_self(), "podscope-stock");
  std::unique_lock<std::mutex> lock(pool_mutex_);
  while (stocking_) {
    pool_cv_.wait(lock,
                  [&] { return !stocking_ || warm_.size() < warm_target_; });
    if (!stocking_) break;
    // A few at a time, the lock released while their pages are mapped.
    const size_t want = std::min<size_t>(warm_target_ - warm_.size(), 8);
    lock.unlock();
    Block* made[8];
    size_t n = 0;
    while (n < want && ReserveTotal()) {
      Block* b = NewBlock(/*populated=*/true);
      if (b == nullptr) {
        total_.fetch_sub(1, std::memory_order_relaxed);
        break;
      }
      made[n++] = b;
    }
    lock.lock();
    warm_.insert(warm_.end(), made, made + n);
    if (n < want) {
      // The budget is spent: wait for the next Refill's ask.
      warm_target_ = static_cast<uint32_t>(warm_.size());
    }
  }
}

void BufferRegistry::RefillIfDue() {
  const int64_t last = refilled_at_ns_.load(std::memory_order_relaxed);
  if (SteadyNs() - last >= 1'000'000) Refill();
}

void BufferRegistry::TrimPools() {
  ForEach([&](ThreadBuffer* buffer) {
    Block* pool = buffer->free.exchange(nullptr, std::memory_order_acquire);
    // Kept by address, lowest first: the blocks kept share as few of the
    // arena's chunks as they can, so that the others are unmapped whole.
    std::vector<Block*> blocks;
    for (Block* b = pool; b != nullptr; b = b->next) blocks.push_back(b);
    std::sort(blocks.begin(), blocks.end());
    uint32_t removed = 0;
    while (!blocks.empty() &&
           buffer->allocated.load(std::memory_order_relaxed) >
               Block::kKeptBlocks) {
      DeleteBlock(blocks.back());
      blocks.pop_back();
      Freed(buffer);
      ++removed;
    }
    buffer->given.fetch_sub(removed, std::memory_order_relaxed);
    // The rest goes back for the owner, which may take the list meanwhile.
    for (Block* b : blocks) Push(&buffer->free, b);
  });
  Arena().ReleaseFreePieces();
}

void BufferRegistry::ForEach(const std::function<void(ThreadBuffer*)>& fn) {
  std::vector<ThreadBuffer*> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot = buffers_;
  }
  for (ThreadBuffer* b : snapshot) fn(b);
}

std::vector<ThreadBuffer*> BufferRegistry::ReleaseExited() {
  std::vector<ThreadBuffer*> dead;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(buffers_, [&](ThreadBuffer* b) {
      if (!b->exited.load(std::memory_order_acquire)) return false;
      dead.push_back(b);
      return true;
    });
  }
  for (ThreadBuffer* b : dead) {
    uint32_t n = FreeList(b->full.exchange(nullptr));
    n += FreeList(b->free.exchange(nullptr));
    n += FreeList(b->spare);
    if (Block* current = b->current.load()) {
      DeleteBlock(current);
      ++n;
    }
    total_.fetch_sub(std::min(n, total_.load(std::memory_order_relaxed)),
                     std::memory_order_relaxed);
    delete b;
  }
  if (!dead.empty()) Arena().ReleaseFreePieces();
  return dead;
}

std::atomic<bool> g_drain_bell_armed{false};

namespace {
struct DrainBell {
  std::mutex mutex;
  const void* owner = nullptr;  // guarded by mutex
  std::function<void()> wake;   // guarded by mutex
};
DrainBell& Bell() {
  static auto* bell = new DrainBell();
  return *bell;
}
}  // namespace

void ListenForDrainBell(const void* owner, std::function<void()> wake) {
  DrainBell& bell = Bell();
  std::lock_guard<std::mutex> lock(bell.mutex);
  bell.owner = owner;
  bell.wake = std::move(wake);
  g_drain_bell_armed.store(true, std::memory_order_release);
}

void SilenceDrainBell(const void* owner) {
  DrainBell& bell = Bell();
  std::lock_guard<std::mutex> lock(bell.mutex);
  if (bell.owner != owner) return;
  g_drain_bell_armed.store(false, std::memory_order_relaxed);
  bell.owner = nullptr;
  bell.wake = nullptr;
}

void RingDrainBellSlow() {
  // Only the first thread to see it armed rings.
  if (!g_drain_bell_armed.exchange(false, std::memory_order_acq_rel)) return;
  DrainBell& bell = Bell();
  std::lock_guard<std::mutex> lock(bell.mutex);
  if (bell.wake) bell.wake();
}

std::mutex& BufferDrainMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}

int& SessionsDraining() {
  static int count = 0;
  return count;
}

namespace {

struct Levels {
  std::mutex mutex;
  int session = 0;   // guarded by mutex
  int recorder = 0;  // guarded by mutex
};
Levels& RecordingLevels() {
  static auto* levels = new Levels();
  return *levels;
}

void PublishLevel(const Levels& l) {
  g_level.store(std::max(l.session, l.recorder), std::memory_order_release);
}

}  // namespace

void SetSessionLevel(int level) {
  Levels& l = RecordingLevels();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.session = level;
  PublishLevel(l);
}

void SetRecorderLevel(int level) {
  Levels& l = RecordingLevels();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.recorder = level;
  PublishLevel(l);
}

RawEvent* ReserveSlow(uint32_t n) {
  if (t_exited || n > Block::kSlots) return nullptr;
  ThreadBuffer* buffer = BufferRegistry::Get().ForThisThread();
  // The current block (if any) cannot hold n more slots: hand it over.
  Block* old = buffer->current.load(std::memory_order_relaxed);
  if (old != nullptr) {
    Push(&buffer->full, old);
    RingDrainBell();
    buffer->current.store(nullptr, std::memory_order_release);
    t_cursor = ThreadCursor();
  }
  Block* fresh = NextBlock(buffer);
  if (fresh == nullptr) {
    // The owner is the only writer of its count: no read-modify-write.
    buffer->dropped.store(buffer->dropped.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
    return nullptr;
  }
  Install(buffer, fresh);
  RawEvent* e = t_cursor.next;
  t_cursor.next += n;
  t_cursor.index += n;
  return e;
}

void RecordSliceSlow(uint64_t start, uint64_t end, uint32_t name) {
  RawEvent* e = ReserveSlow(1);
  if (e == nullptr) return;
  *e = {start, end, name, kRecordSlice, 0, 0};
  Commit();
}

Block* TakeFullBlocks(ThreadBuffer* buffer) {
  Block* full = buffer->full.exchange(nullptr, std::memory_order_acquire);
  // The stack holds the newest block first.
  Block* oldest_first = nullptr;
  while (full != nullptr) {
    Block* next = full->next;
    full->next = oldest_first;
    oldest_first = full;
    full = next;
  }
  return oldest_first;
}

void RecycleBlock(ThreadBuffer* buffer, Block* block) {
  block->consumed = 0;
  block->committed.store(0, std::memory_order_relaxed);
  buffer->given.fetch_add(1, std::memory_order_relaxed);
  Push(&buffer->free, block);
}

uint32_t InternSite(NameSite* site) {
  const uint32_t id = StringRegistry::Get().Intern(site->name);
  site->id.store(id, std::memory_order_relaxed);
  return id;
}

uint32_t InternDynamic(std::string_view name) {
  // Most dynamic names repeat; a per-thread cache keeps the registry's lock
  // off the common path.
  thread_local absl::flat_hash_map<std::string, uint32_t> cache;
  const absl::string_view key(name.data(), name.size());
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const uint32_t id = StringRegistry::Get().Intern(name);
  if (cache.size() < 65536) cache.emplace(std::string(name), id);
  return id;
}

void RecordInstant(uint32_t name, Level level) {
  RawEvent* e = Reserve(1);
  if (e == nullptr) return;
  *e = {Ticks(), 0, name, kRecordInstant, 0, 0};
  Commit();
}

void RecordCounter(uint32_t name, double value) {
  RawEvent* e = Reserve(1);
  if (e == nullptr) return;
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  *e = {Ticks(), bits, name, kRecordCounter, 0, 0};
  Commit();
}

}  // namespace internal

void SetThreadName(std::string_view name) {
  internal::ThreadBuffer* b = internal::BufferRegistry::Get().ForThisThread();
  if (b == nullptr) return;
  std::lock_guard<std::mutex> lock(b->name_mutex);
  b->name = std::string(name);
}

void SetLevel(Level level) {
  // Only while a session records: a stopped profiler stays off, and the
  // flight recorder keeps its own level.
  internal::Levels& l = internal::RecordingLevels();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.session == 0) return;
  l.session = static_cast<int>(level);
  internal::PublishLevel(l);
}

}  // namespace podscope::profiler
