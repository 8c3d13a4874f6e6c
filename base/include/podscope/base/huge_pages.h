// Large arrays backed by transparent huge pages where the system offers
// them. A page fault costs microseconds (tens on some virtual machines);
// an array of hundreds of MiB touched for the first time in 4 KiB pages
// takes one fault per page, in 2 MiB pages one per 512. The kernel only
// uses huge pages for memory advised so when its setting is `madvise` (the
// usual default), so arrays that are filled once and kept (a viewer's
// columns, a merge's output) are advised before they are first touched.
#ifndef PODSCOPE_BASE_HUGE_PAGES_H_
#define PODSCOPE_BASE_HUGE_PAGES_H_

#include <cstddef>
#include <iterator>
#include <new>
#include <vector>

namespace podscope::base {

// Below this, advising costs more than it saves.
inline constexpr size_t kHugePageAdviceMinBytes = size_t{8} << 20;

// Advises the whole 2 MiB pages inside [data, data + bytes) for huge pages
// (MADV_HUGEPAGE); nothing when the range is smaller than
// kHugePageAdviceMinBytes. Only a hint: never fails, never moves memory,
// and memory already touched stays as it is.
void AdviseHugePages(void* data, size_t bytes);

// v->reserve(n), advising a new allocation before anything is written to
// it (unlike reserve(), which copies the old elements first).
template <typename T, typename A>
void ReserveHuge(std::vector<T, A>* v, size_t n) {
  if (n <= v->capacity()) return;
  std::vector<T, A> bigger;
  bigger.reserve(n);
  AdviseHugePages(bigger.data(), n * sizeof(T));
  bigger.insert(bigger.end(), std::make_move_iterator(v->begin()),
                std::make_move_iterator(v->end()));
  v->swap(bigger);
}

// Memory for arrays that are built once and kept, 64-byte aligned, packed
// into slabs of huge pages. Most of a large trace's columns are one or a
// few MiB each: too small for a huge page of their own, so advising each
// (AdviseHugePages) leaves them in 4 KiB pages. Here allocations from
// 64 KiB to 8 MiB are carved one after another out of the calling thread's
// current 32 MiB slab, advised for huge pages; a slab returns to the
// system when it is no longer any thread's current one and its last
// allocation is freed. Smaller ones go to operator new, larger ones to
// operator new advised as a whole. Under AddressSanitizer every
// allocation goes to operator new, so that overruns stay visible.
// Thread-safe; `bytes` passed to HugeFree must be those allocated.
void* HugeAllocate(size_t bytes);
void HugeFree(void* p, size_t bytes);
// Slabs mapped now (for tests).
size_t HugeSlabsMapped();

// A standard allocator over HugeAllocate, for std::vector columns.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(HugeAllocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { HugeFree(p, n * sizeof(T)); }
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) {
    return true;
  }
};

// v->resize(n) into advised memory.
template <typename T, typename A>
void ResizeHuge(std::vector<T, A>* v, size_t n) {
  ReserveHuge(v, n);
  v->resize(n);
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_HUGE_PAGES_H_
