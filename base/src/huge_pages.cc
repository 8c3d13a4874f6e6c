#include "podscope/base/huge_pages.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <new>

#include "podscope/base/sanitizers.h"

namespace podscope::base {
namespace {

constexpr uintptr_t kPage = 4096;
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// `to` is a power of two.
constexpr uintptr_t AlignDown(uintptr_t v, uintptr_t to) {
  return v & ~(to - 1);
}
constexpr uintptr_t AlignUp(uintptr_t v, uintptr_t to) {
  return AlignDown(v + to - 1, to);
}

}  // namespace

void AdviseHugePages(void* data, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  if (data == nullptr || bytes < kHugePageAdviceMinBytes) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t lo = AlignUp(begin, kHugePage);
  const uintptr_t hi = AlignDown(begin + bytes, kHugePage);
  if (hi <= lo) return;
  // EINVAL where the kernel has no transparent huge pages: a hint only.
  madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kSlabBytes = size_t{32} << 20;
constexpr size_t kSmallest = size_t{64} << 10;  // below: operator new
constexpr size_t kLargest = size_t{8} << 20;    // above: a block of its own

// A slab's header sits in its first bytes; slabs are aligned to their size,
// so any pointer into one finds it. `refs` counts the live allocations
// plus one for the thread whose current slab it is; whoever drops it to
// zero unmaps the slab.
struct Slab {
  std::atomic<size_t> refs{1};
  size_t used = 0;  // bump offset, only touched by the owning thread
};
static_assert(sizeof(Slab) <= kAlign);

std::atomic<size_t> g_slabs{0};

Slab* MapSlab() {
  // Twice the size, then the aligned middle kept.
  void* raw = mmap(nullptr, 2 * kSlabBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = AlignUp(begin, kSlabBytes);
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t end = begin + 2 * kSlabBytes;
  if (end > aligned + kSlabBytes) {
    munmap(reinterpret_cast<void*>(aligned + kSlabBytes),
           end - (aligned + kSlabBytes));
  }
  void* slab = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
  madvise(slab, kSlabBytes, MADV_HUGEPAGE);
#endif
  g_slabs.fetch_add(1, std::memory_order_relaxed);
  auto* header = new (slab) Slab;
  header->used = kAlign;
  return header;
}

// Gives the whole pages inside [lo, hi) back to the system: the freed
// middle of a slab, or the rest of the huge page a full slab's last
// allocation ended in, are never handed out again.
void Discard(uintptr_t lo, uintptr_t hi) {
  lo = AlignUp(lo, kPage);
  hi = AlignDown(hi, kPage);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void Unref(Slab* slab) {
  if (slab->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    slab->~Slab();
    munmap(slab, kSlabBytes);
    g_slabs.fetch_sub(1, std::memory_order_relaxed);
  }
}

// The calling thread's current slab; given up when full or when the
// thread ends.
struct CurrentSlab {
  Slab* slab = nullptr;
  ~CurrentSlab() {
    if (slab != nullptr) Unref(slab);
  }
};
thread_local CurrentSlab t_current;

bool FromSlab(size_t bytes) {
  return !PODSCOPE_ASAN && bytes >= kSmallest && bytes <= kLargest;
}

}  // namespace

void* HugeAllocate(size_t bytes) {
  if (!FromSlab(bytes)) {
    void* p = ::operator new (bytes, std::align_val_t{kAlign});
    if (bytes > kLargest) AdviseHugePages(p, bytes);
    return p;
  }
  const size_t rounded = AlignUp(bytes, kAlign);
  Slab*& slab = t_current.slab;
  if (slab == nullptr || kSlabBytes - slab->used < rounded) {
    if (slab != nullptr) {
      const auto used = reinterpret_cast<uintptr_t>(slab) + slab->used;
      Discard(used, AlignUp(used, kHugePage));
      Unref(slab);
    }
    slab = MapSlab();
    if (slab == nullptr) throw std::bad_alloc();
  }
  void* p = reinterpret_cast<char*>(slab) + slab->used;
  slab->used += rounded;
  slab->refs.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void HugeFree(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (!FromSlab(bytes)) {
    ::operator delete (p, std::align_val_t{kAlign});
    return;
  }
  auto* slab = reinterpret_cast<Slab*>(
      AlignDown(reinterpret_cast<uintptr_t>(p), kSlabBytes));
  // Not the last reference: the slab stays, and the block's pages go.
  if (slab->refs.load(std::memory_order_relaxed) > 1) {
    const auto lo = reinterpret_cast<uintptr_t>(p);
    Discard(lo, lo + bytes);
  }
  Unref(slab);
}

size_t HugeSlabsMapped() { return g_slabs.load(std::memory_order_relaxed); }

}  // namespace podscope::base
