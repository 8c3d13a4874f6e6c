// The slices of one track, stored column by column and grouped by depth so
// that each depth is one run of slices sorted by start. About 10 bytes a
// slice stay resident (9 to 11 with the name's code):
//   start     4 B  offset from the smallest start of its 256-slice block
//                  (8 B per block); a slice too far from it goes to a side
//                  table
//   duration  4 B  saturated at 2^32-1 ns (4.3 s); longer ones go to a side
//                  table
//   name      1 B  a code into the track's table of names (NameColumn);
//                  2 B in a track of more than 256 names
// plus the level-of-detail index over durations (BucketTree, ~0.3 B) and
// the start of every 32nd slice (0.25 B), which the level-of-detail query
// searches before the slices themselves.
//
// Within a depth, starts and ends both ascend (the reader's nesting rule
// guarantees it for any track; a track where it does not hold is laid out
// again into lanes that do not overlap, see relaid()). That makes the
// slices that touch any time interval one contiguous run of indices, found
// by two binary searches.
#ifndef PODSCOPE_VIEWER_SLICE_COLUMNS_H_
#define PODSCOPE_VIEWER_SLICE_COLUMNS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <span>
#include <utility>
#include <vector>

#include "podscope/base/huge_pages.h"
#include "podscope/trace_format/events.h"
#include "podscope/viewer/bucket_tree.h"
#include "podscope/viewer/name_column.h"

namespace podscope::viewer {

// The self time of each slice of one track: its duration minus the union of
// its direct children (the slices it encloses with nothing between, by the
// reader's nesting rule). `slices` are in reader order
// (trace_format::SliceOrder). The same definition as `podscope summary`.
std::vector<int64_t> ComputeSelfTimes(
    std::span<const trace_format::Slice> slices);

// Allocates on cache-line boundaries (a bucket of 32 four-byte values then
// lies in two cache lines rather than three), in huge pages shared by the
// columns a thread builds (base::HugeAllocate): a session's columns are
// hundreds of MiB in pieces of a few MiB, first touched while it opens.
template <typename T>
using LineAlignedAllocator = base::HugePageAllocator<T>;

class SliceColumns {
 public:
  static constexpr uint32_t kSaturated = 0xFFFFFFFFu;

  SliceColumns() = default;

  // Takes slices in reader order with reader depths. `storage_of_reader`
  // (may be null) receives, for each input slice, its index here.
  static SliceColumns Build(std::vector<trace_format::Slice> slices,
                            std::vector<uint32_t>* storage_of_reader);
  // The same from `*slices`, which is spent (left empty) but keeps its
  // allocation, for a loader that converts track after track.
  static SliceColumns Build(std::vector<trace_format::Slice>* slices,
                            std::vector<uint32_t>* storage_of_reader);
  // The same for slices in reader order whose depths are not yet known:
  // they are set by the reader's rule (trace_format::ComputeSliceDepths)
  // in the pass that counts them, not in a pass of their own.
  static SliceColumns BuildWithDepths(std::vector<trace_format::Slice>* slices,
                                      std::vector<uint32_t>* storage_of_reader);

  // The live viewer's append (slice_columns_append.cc): `old` followed by
  // `fresh` (reader order, depths among themselves), when `old` is not
  // relaid and every fresh slice starts at or after every old slice's
  // covered end, so that each depth's fresh run goes after its old one.
  // The same columns as Build of all the slices, without going through
  // trace_format::Slice. `where` receives each slice's new index: old
  // indices first, then fresh.
  static SliceColumns AppendAfter(const SliceColumns& old,
                                  std::span<const trace_format::Slice> fresh,
                                  std::vector<uint32_t>* where);

  uint32_t size() const { return static_cast<uint32_t>(durations_.size()); }
  bool empty() const { return durations_.empty(); }
  uint32_t depth_count() const {
    return depth_begin_.empty()
               ? 0
               : static_cast<uint32_t>(depth_begin_.size() - 1);
  }
  uint32_t depth_begin(uint32_t depth) const { return depth_begin_[depth]; }
  uint32_t depth_end(uint32_t depth) const { return depth_begin_[depth + 1]; }
  uint32_t depth(uint32_t i) const;
  // True when the reader's depths overlapped within a depth and the track
  // was laid out in lanes instead (depth is then the lane).
  bool relaid() const { return relaid_; }

  int64_t start(uint32_t i) const {
    const uint32_t off = start_offsets_[i];
    if (off != kSaturated) [[likely]] {
      return block_base_[i >> kBlockBits] + off;
    }
    return Overflow(start_overflow_, i);
  }
  int64_t duration(uint32_t i) const {
    const uint32_t d = durations_[i];
    if (d != kSaturated) [[likely]]
      return d;
    return Overflow(duration_overflow_, i);
  }
  int64_t end(uint32_t i) const {
    int64_t e;
    if (__builtin_add_overflow(start(i), duration(i), &e)) [[unlikely]] {
      return std::numeric_limits<int64_t>::max();
    }
    return e;
  }
  // The end used to decide what a slice touches: a slice covers
  // [start, max(end, start + 1)), so an empty slice still covers its
  // nanosecond.
  int64_t covered_end(uint32_t i) const {
    const int64_t s = start(i), e = end(i);
    return e > s ? e : s + (s < INT64_MAX ? 1 : 0);
  }
  uint32_t name(uint32_t i) const { return names_[i]; }
  // For scans that read whole runs: the names' column, and the durations
  // as stored, where kSaturated stands for duration(i) (2^32 - 1 or more).
  const NameColumn& names() const { return names_; }
  const uint32_t* stored_durations() const { return durations_.data(); }
  trace_format::Slice Get(uint32_t i) const {
    return {start(i), duration(i), name(i), depth(i)};
  }

  // A hint that slice i will be read soon: the level-of-detail query asks
  // for the next pixels' slices while it works on this one, so their cache
  // misses overlap. No effect on results; out-of-range i is ignored.
  // The prefetch hints are always inlined: GCC takes a call to a function
  // that only prefetches for a call without effects and removes it.
  [[gnu::always_inline]] void Prefetch(uint32_t i) const {
    if (i < start_offsets_.size()) {
      __builtin_prefetch(&start_offsets_[i]);
      __builtin_prefetch(&durations_[i]);
      names_.Prefetch(i);
      __builtin_prefetch(&block_base_[i >> kBlockBits]);
    }
  }

  // Every kStartBucket-th slice's start, dense: searching these first
  // finds where a time falls in a long run of one depth in a cache line or
  // two, then a search of kStartBucket slices finishes it.
  static constexpr uint32_t kStartBucket = 32;
  uint32_t bucket_count() const {
    return static_cast<uint32_t>(bucket_starts_.size());
  }
  // start(k * kStartBucket).
  int64_t bucket_start(uint32_t k) const { return bucket_starts_[k]; }
  [[gnu::always_inline]] void PrefetchBucket(uint32_t k) const {
    if (k < bucket_starts_.size()) __builtin_prefetch(&bucket_starts_[k]);
  }
  // A hint that the starts and durations of slices [from, to) (at most a
  // bucket) and the running total of covered time around them will be
  // read soon: every cache line they lie in, not only the first.
  [[gnu::always_inline]] void PrefetchRun(uint32_t from, uint32_t to) const {
    if (from >= to || to > start_offsets_.size()) return;
    for (const uint32_t* column : {start_offsets_.data(), durations_.data()}) {
      const char* line = reinterpret_cast<const char*>(column + from);
      const char* last = reinterpret_cast<const char*>(column + to - 1);
      for (; line < last; line += 64) __builtin_prefetch(line);
      __builtin_prefetch(last);
    }
    __builtin_prefetch(&block_base_[from >> kBlockBits]);
    covered_.Prefetch(from);
  }
  // The longest duration (saturated) among the slices of bucket k, which
  // may hold slices of two depths: an upper bound for any of them.
  uint32_t bucket_longest(uint32_t k) const { return longest_.bucket_value(k); }
  // The longest slice of the whole buckets [k0, k1) (non-empty), when
  // none of them holds a saturated duration; else any of their slices
  // whose saturated duration is the largest (use Longest to compare
  // those).
  uint32_t LongestOfBuckets(uint32_t k0, uint32_t k1) const {
    return static_cast<uint32_t>(
        longest_.bucket_best(longest_.BestBucket(k0, k1)));
  }

  // Within [from, to), which lie in one bucket of one depth: the first
  // slice that starts at or after t. Bisects with a conditional move per
  // step rather than a branch, so that the answer costs no mispredicted
  // branches (and five reads of a full bucket rather than 32).
  uint32_t FirstStartingInBucket(uint32_t from, uint32_t to, int64_t t) const {
    if (from >= to) return to;
    const int64_t base = block_base_[from >> kBlockBits];
    int64_t rel;
    if (t <= base) return from;  // no slice of the block starts before base
    if (!__builtin_sub_overflow(t, base, &rel) && rel < kSaturated) {
      // A saturated offset stands for a start at or past base + 2^32 - 1,
      // so after t: comparing offsets is exact, and they ascend (the
      // saturated ones last) as the depth's starts do.
      const uint32_t limit = static_cast<uint32_t>(rel);
      const uint32_t* first = start_offsets_.data() + from;
      const uint32_t* p = first;  // the answer is in [p, p + n]
      uint32_t n = to - from;
      while (n > 1) {
        const uint32_t half = n / 2;
        p = p[half] < limit ? p + half : p;
        n -= half;
      }
      return from + static_cast<uint32_t>(p - first) + (*p < limit ? 1 : 0);
    }
    while (from < to && start(from) < t) ++from;
    return from;
  }

  // Within [lo, hi) of one depth: the first slice whose covered end is
  // after t, and the first slice that starts at or after t.
  uint32_t FirstEndingAfter(uint32_t lo, uint32_t hi, int64_t t) const;
  uint32_t FirstStartingAtOrAfter(uint32_t lo, uint32_t hi, int64_t t) const;
  // The index of the longest slice in [lo, hi) (lowest index on ties), in
  // O(log n) plus two small scans; hi when the range is empty.
  uint32_t Longest(uint32_t lo, uint32_t hi) const;

  // The time slice i covers, max(duration, 1) ns, and the sum of it over
  // slices [0, i) modulo 2^64 (exact for differences within one depth,
  // whose slices do not overlap): O(32) reads, from a running total every
  // 32 slices (0.25 B a slice).
  uint64_t covered_length(uint32_t i) const {
    return static_cast<uint64_t>(std::max<int64_t>(duration(i), 1));
  }
  uint64_t CoveredBefore(uint32_t i) const {
    return covered_.Prefix(i, [this](size_t j) {
      return covered_length(static_cast<uint32_t>(j));
    });
  }

  // Calls fn(index, self_ns) for each slice in [lo, hi) of one depth.
  void ForEachSelfTime(uint32_t lo, uint32_t hi,
                       const std::function<void(uint32_t, int64_t)>& fn) const;
  int64_t SelfTime(uint32_t i) const;

  // Replaces each name id n with remap[n].
  void RemapNames(std::span<const uint32_t> remap);

  size_t resident_bytes() const;

 private:
  static constexpr int kBlockBits = 8;
  using Side = std::vector<std::pair<uint32_t, int64_t>>;  // by index
  static int64_t Overflow(const Side& side, uint32_t i);
  // The Builds; `release` frees the slices once read, `compute_depths`
  // sets their depths first.
  static SliceColumns BuildFrom(std::vector<trace_format::Slice>* slices,
                                std::vector<uint32_t>* storage_of_reader,
                                bool release, bool compute_depths = false);
  // Stores slice k's duration (negative as 0; saturated ones on the side).
  void SetDuration(uint32_t k, int64_t duration_ns);
  // The indexes over the laid-out columns (start offsets per block, start
  // buckets, longest and covered trees), from the starts in storage order.
  void BuildIndexes(const int64_t* starts, size_t n);

  std::vector<int64_t> block_base_;
  // The columns the level-of-detail query reads a bucket at a time.
  using Column = std::vector<uint32_t, LineAlignedAllocator<uint32_t>>;
  Column start_offsets_;
  Side start_overflow_;
  Column durations_;
  Side duration_overflow_;
  NameColumn names_;
  std::vector<uint32_t> depth_begin_;
  std::vector<int64_t> bucket_starts_;
  BucketTree<uint32_t, std::greater<uint32_t>> longest_;
  BucketSums covered_;
  bool relaid_ = false;
  // Relaid tracks only: self times by index (the lanes are not the
  // nesting, so they cannot be derived from depths).
  std::vector<int64_t> self_;
};

// Instant events of one track by time: 12 bytes each.
struct InstantColumns {
  std::vector<int64_t> ts;
  std::vector<uint32_t> names;
  uint32_t size() const { return static_cast<uint32_t>(ts.size()); }
};

// Counter values of one track by time, with min/max indexes for
// downsampling.
struct CounterColumns {
  std::vector<int64_t> ts;
  std::vector<double> values;
  BucketTree<double, std::less<double>> min_index;
  BucketTree<double, std::greater<double>> max_index;
  uint32_t size() const { return static_cast<uint32_t>(ts.size()); }
  void BuildIndexes() {
    min_index.Build(values);
    max_index.Build(values);
  }
};

// Stack samples of one track by time; stack ids are the file's (see
// ProcessInfo::stacks).
struct SampleColumns {
  std::vector<int64_t> ts;
  std::vector<uint32_t> stacks;
  uint32_t size() const { return static_cast<uint32_t>(ts.size()); }
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_SLICE_COLUMNS_H_
