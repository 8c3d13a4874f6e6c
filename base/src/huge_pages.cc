#include "podscope/base/huge_pages.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <new>

#include "podscope/base/sanitizers.h"

namespace podscope::base {

void AdviseHugePages(void* data, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  if (data == nullptr || bytes < kHugePageAdviceMinBytes) return;
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t lo = (begin + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t hi = (begin + bytes) & ~(kHuge - 1);
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
  const uintptr_t aligned = (begin + kSlabBytes - 1) & ~(kSlabBytes - 1);
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

constexpr uintptr_t kPage = 4096;
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// Gives the whole pages inside [lo, hi) back to the system: the freed
// middle of a slab, or the rest of the huge page a full slab's last
// allocation ended in, are never handed out again.
void Discard(uintptr_t lo, uintptr_t hi) {
  lo = (lo + kPage - 1) & ~(kPage - 1);
  hi &= ~(kPage - 1);
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
  const size_t rounded = (bytes + kAlign - 1) & ~(kAlign - 1);
  Slab*& slab = t_current.slab;
  if (slab == nullptr || kSlabBytes - slab->used < rounded) {
    if (slab != nullptr) {
      const auto used = reinterpret_cast<uintptr_t>(slab) + slab->used;
      Discard(used, (used + kHugePage - 1) & ~(kHugePage - 1));
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
  auto* slab = reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(p) &
                                       ~(kSlabBytes - 1));
  // Not the last reference: the slab stays, and the block's pages go.
  if (slab->refs.load(std::memory_order_relaxed) > 1) {
    const auto lo = reinterpret_cast<uintptr_t>(p);
    Discard(lo, lo + bytes);
  }
  Unref(slab);
}

size_t HugeSlabsMapped() { return g_slabs.load(std::memory_order_relaxed); }

}  // namespace podscope::base
