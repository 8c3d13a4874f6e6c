#include "src/thread_buffer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
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
    return b;
  }
  if (BufferRegistry::Get().TryAllocate(buffer)) {
    buffer->drawn.fetch_add(1, std::memory_order_relaxed);
    return new Block;
  }
  return nullptr;
}

// A new block with its pages faulted in (one write per page is enough).
Block* TouchedBlock() {
  auto* block = new Block;
  for (size_t offset = 0; offset < sizeof(block->slots); offset += 4096) {
    reinterpret_cast<volatile char*>(block->slots)[offset] = 0;
  }
  return block;
}

// Frees a list of blocks; how many there were.
uint32_t FreeList(Block* b) {
  uint32_t n = 0;
  while (b != nullptr) {
    Block* next = b->next;
    delete b;
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
  // Other owners allocate concurrently: reserve the session's share first.
  if (total_.fetch_add(1, std::memory_order_relaxed) >= max_blocks_total()) {
    total_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  buffer->allocated.fetch_add(1, std::memory_order_relaxed);
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
           TryAllocate(buffer)) {
      Push(&buffer->free, TouchedBlock());
    }
  });
}

void BufferRegistry::Refill() {
  ForEach([&](ThreadBuffer* buffer) {
    if (buffer->exited.load(std::memory_order_acquire)) return;
    const uint32_t drawn = buffer->drawn.exchange(0, std::memory_order_relaxed);
    uint32_t want = std::min(2 * drawn, Block::kRefillBlocks);
    while (want > 0 && TryAllocate(buffer)) {
      Push(&buffer->free, TouchedBlock());
      --want;
    }
  });
}

void BufferRegistry::TrimPools() {
  ForEach([&](ThreadBuffer* buffer) {
    Block* pool = buffer->free.exchange(nullptr, std::memory_order_acquire);
    while (pool != nullptr &&
           buffer->allocated.load(std::memory_order_relaxed) >
               Block::kKeptBlocks) {
      Block* next = pool->next;
      delete pool;
      Freed(buffer);
      pool = next;
    }
    // The rest goes back for the owner, which may take the list meanwhile.
    while (pool != nullptr) {
      Block* next = pool->next;
      Push(&buffer->free, pool);
      pool = next;
    }
  });
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
      delete current;
      ++n;
    }
    total_.fetch_sub(std::min(n, total_.load(std::memory_order_relaxed)),
                     std::memory_order_relaxed);
    delete b;
  }
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
