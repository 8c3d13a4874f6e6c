#include "podscope/viewer/slice_columns.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <queue>

#include "podscope/base/huge_pages.h"
#include "podscope/trace_format/chunk_codec.h"

namespace podscope::viewer {

// The level-of-detail query reads bucket starts and bucket maxima as one
// grid.
static_assert(SliceColumns::kStartBucket ==
              BucketTree<uint32_t, std::greater<uint32_t>>::kLeaf);

namespace {

using trace_format::Slice;

int64_t CoveredEnd(const Slice& s) {
  const int64_t e = s.end_ns();
  if (e > s.start_ns) return e;
  return s.start_ns < std::numeric_limits<int64_t>::max() ? s.start_ns + 1
                                                          : s.start_ns;
}

// Puts each slice in the lane that freed up first, or a new lane: no two
// slices of a lane overlap, so their ends ascend with their starts.
void AssignLanes(std::vector<Slice>* slices) {
  using Lane = std::pair<int64_t, uint32_t>;  // (covered end, lane)
  std::priority_queue<Lane, std::vector<Lane>, std::greater<Lane>> free_at;
  uint32_t lanes = 0;
  for (Slice& s : *slices) {
    uint32_t lane;
    if (!free_at.empty() && free_at.top().first <= s.start_ns) {
      lane = free_at.top().second;
      free_at.pop();
    } else {
      lane = lanes++;
    }
    s.depth = lane;
    free_at.push({CoveredEnd(s), lane});
  }
}

}  // namespace

std::vector<int64_t> ComputeSelfTimes(std::span<const Slice> slices) {
  std::vector<int64_t> self(slices.size());
  // covered_until[i]: the end of the union of i's children seen so far.
  std::vector<int64_t> covered_until(slices.size());
  std::vector<size_t> open;
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    self[i] = s.duration_ns;
    covered_until[i] = s.start_ns;
    // The reader's rule (trace_format::ComputeSliceDepths): a slice that
    // ends before this one ends is closed.
    while (!open.empty() && slices[open.back()].end_ns() < s.end_ns()) {
      open.pop_back();
    }
    if (!open.empty()) {
      const size_t parent = open.back();
      const int64_t from = std::max(s.start_ns, covered_until[parent]);
      if (s.end_ns() > from) {
        self[parent] -= s.end_ns() - from;
        covered_until[parent] = s.end_ns();
      }
    }
    open.push_back(i);
  }
  return self;
}

SliceColumns SliceColumns::Build(std::vector<Slice> slices,
                                 std::vector<uint32_t>* storage_of_reader) {
  return BuildFrom(&slices, storage_of_reader, /*release=*/true);
}

SliceColumns SliceColumns::Build(std::vector<Slice>* slices,
                                 std::vector<uint32_t>* storage_of_reader) {
  return BuildFrom(slices, storage_of_reader, /*release=*/false);
}

SliceColumns SliceColumns::BuildWithDepths(
    std::vector<Slice>* slices, std::vector<uint32_t>* storage_of_reader) {
  return BuildFrom(slices, storage_of_reader, /*release=*/false,
                   /*compute_depths=*/true);
}

SliceColumns SliceColumns::BuildFrom(std::vector<Slice>* in,
                                     std::vector<uint32_t>* storage_of_reader,
                                     bool release, bool compute_depths) {
  std::vector<Slice>& slices = *in;
  SliceColumns c;
  const size_t n = slices.size();
  std::vector<int64_t> reader_self;
  // One pass over the slices (they are far larger than the cache, so each
  // pass costs memory bandwidth): the slices per depth, and whether each
  // depth's covered ends ascend.
  std::vector<uint32_t> per_depth;
  std::vector<int64_t> last_end;
  bool monotone = true;
  trace_format::SliceDepths nesting;  // when compute_depths
  for (Slice& s : slices) {
    if (compute_depths) s.depth = nesting.Next(s);
    if (s.depth >= per_depth.size()) [[unlikely]] {
      per_depth.resize(s.depth + 1, 0);
      last_end.resize(s.depth + 1, std::numeric_limits<int64_t>::min());
    }
    ++per_depth[s.depth];
    const int64_t e = CoveredEnd(s);
    monotone &= e >= last_end[s.depth];
    last_end[s.depth] = e;
  }
  if (!monotone) {
    c.relaid_ = true;
    reader_self = ComputeSelfTimes(slices);
    AssignLanes(&slices);
    per_depth.clear();
    for (const Slice& s : slices) {
      if (s.depth >= per_depth.size()) per_depth.resize(s.depth + 1, 0);
      ++per_depth[s.depth];
    }
  }
  const uint32_t depths = static_cast<uint32_t>(per_depth.size());
  c.depth_begin_.assign(depths + 1, 0);
  for (uint32_t d = 0; d < depths; ++d) {
    c.depth_begin_[d + 1] = c.depth_begin_[d] + per_depth[d];
  }
  std::vector<uint32_t> next(c.depth_begin_.begin(), c.depth_begin_.end() - 1);
  // Where each input slice goes, kept only when someone asks.
  std::vector<uint32_t> where;
  const bool keep_where = storage_of_reader != nullptr || c.relaid_;
  if (keep_where) base::ResizeHuge(&where, n);

  // Written in full below: no need to zero them first.
  std::unique_ptr<int64_t[]> starts(new int64_t[n]);
  base::AdviseHugePages(starts.get(), n * sizeof(int64_t));
  c.durations_.resize(n);
  NameColumnBuilder names(n);
  // Through local pointers: the compiler cannot tell that a store into a
  // column leaves the others' data pointers and the cursors where they
  // were, and would load them again for every slice.
  const Slice* const in_slices = slices.data();
  uint32_t* const cursor = next.data();
  uint32_t* const where_out = keep_where ? where.data() : nullptr;
  int64_t* const start_out = starts.get();
  uint32_t* const duration_out = c.durations_.data();
  for (size_t i = 0; i < n; ++i) {
    const Slice& s = in_slices[i];
    const uint32_t k = cursor[s.depth]++;
    if (where_out != nullptr) where_out[i] = k;
    start_out[k] = s.start_ns;
    names.Set(k, s.name);
    if (s.duration_ns >= 0 && s.duration_ns < kSaturated) [[likely]] {
      duration_out[k] = static_cast<uint32_t>(s.duration_ns);
    } else {
      c.SetDuration(k, s.duration_ns);
    }
  }
  c.names_ = std::move(names).Finish();
  if (c.relaid_) {
    c.self_.resize(n);
    for (size_t i = 0; i < n; ++i) c.self_[where[i]] = reader_self[i];
  }
  if (storage_of_reader != nullptr) *storage_of_reader = std::move(where);
  slices.clear();
  // The slices are far larger than the columns: free them before the
  // indexes are built, unless the caller keeps them for the next track.
  if (release) slices.shrink_to_fit();

  c.BuildIndexes(starts.get(), n);
  return c;
}

void SliceColumns::SetDuration(uint32_t k, int64_t duration_ns) {
  const int64_t d = std::max<int64_t>(0, duration_ns);
  if (d < kSaturated) {
    durations_[k] = static_cast<uint32_t>(d);
  } else {
    durations_[k] = kSaturated;
    duration_overflow_.push_back({k, d});
  }
}

void SliceColumns::BuildIndexes(const int64_t* starts, size_t n) {
  const size_t blocks = (n + (size_t{1} << kBlockBits) - 1) >> kBlockBits;
  block_base_.resize(blocks);
  start_offsets_.resize(n);
  for (size_t b = 0; b < blocks; ++b) {
    const size_t lo = b << kBlockBits;
    const size_t hi = std::min(n, lo + (size_t{1} << kBlockBits));
    const int64_t base = *std::min_element(starts + lo, starts + hi);
    block_base_[b] = base;
    for (size_t i = lo; i < hi; ++i) {
      // Unsigned difference: correct even when the subtraction would
      // overflow int64.
      const uint64_t off =
          static_cast<uint64_t>(starts[i]) - static_cast<uint64_t>(base);
      if (off < kSaturated) {
        start_offsets_[i] = static_cast<uint32_t>(off);
      } else {
        start_offsets_[i] = kSaturated;
        start_overflow_.push_back({static_cast<uint32_t>(i), starts[i]});
      }
    }
  }
  bucket_starts_.resize((n + kStartBucket - 1) / kStartBucket);
  for (size_t k = 0; k < bucket_starts_.size(); ++k) {
    bucket_starts_[k] = starts[k * kStartBucket];
  }
  std::sort(duration_overflow_.begin(), duration_overflow_.end());
  longest_.Build(durations_);
  covered_.Build(
      n, [this](size_t i) { return covered_length(static_cast<uint32_t>(i)); });
}

int64_t SliceColumns::Overflow(const Side& side, uint32_t i) {
  auto it = std::lower_bound(side.begin(), side.end(), i,
                             [](const std::pair<uint32_t, int64_t>& e,
                                uint32_t k) { return e.first < k; });
  return it->second;
}

uint32_t SliceColumns::depth(uint32_t i) const {
  auto it = std::upper_bound(depth_begin_.begin(), depth_begin_.end(), i);
  return static_cast<uint32_t>(it - depth_begin_.begin()) - 1;
}

uint32_t SliceColumns::FirstEndingAfter(uint32_t lo, uint32_t hi,
                                        int64_t t) const {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (covered_end(mid) > t) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

uint32_t SliceColumns::FirstStartingAtOrAfter(uint32_t lo, uint32_t hi,
                                              int64_t t) const {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (start(mid) >= t) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

uint32_t SliceColumns::Longest(uint32_t lo, uint32_t hi) const {
  if (lo >= hi) return hi;
  const uint32_t best =
      static_cast<uint32_t>(longest_.Best(durations_, lo, hi));
  if (duration_overflow_.empty() || durations_[best] != kSaturated) {
    return best;
  }
  // Several slices of 4.3 s or more: compare their real durations.
  auto it =
      std::lower_bound(duration_overflow_.begin(), duration_overflow_.end(), lo,
                       [](const std::pair<uint32_t, int64_t>& e, uint32_t k) {
                         return e.first < k;
                       });
  uint32_t longest = best;
  int64_t longest_ns = -1;
  for (; it != duration_overflow_.end() && it->first < hi; ++it) {
    if (it->second > longest_ns) {
      longest_ns = it->second;
      longest = it->first;
    }
  }
  return longest;
}

void SliceColumns::ForEachSelfTime(
    uint32_t lo, uint32_t hi,
    const std::function<void(uint32_t, int64_t)>& fn) const {
  if (lo >= hi) return;
  if (relaid_) {
    for (uint32_t i = lo; i < hi; ++i) fn(i, self_[i]);
    return;
  }
  const uint32_t d = depth(lo);
  const uint32_t d_end = depth_end(d);
  if (d + 1 >= depth_count()) {
    for (uint32_t i = lo; i < hi; ++i) fn(i, duration(i));
    return;
  }
  // A slice's direct children are the slices one level deeper that start
  // between it and the next slice of its depth (see the class comment).
  const uint32_t ce = depth_end(d + 1);
  uint32_t c = FirstStartingAtOrAfter(depth_begin(d + 1), ce, start(lo));
  for (uint32_t i = lo; i < hi; ++i) {
    const int64_t next_start =
        i + 1 < d_end ? start(i + 1) : std::numeric_limits<int64_t>::max();
    int64_t self = duration(i);
    int64_t covered = start(i);
    for (; c < ce; ++c) {
      const int64_t cs = start(c);
      if (cs >= next_start) break;
      const int64_t e = end(c);
      const int64_t from = std::max(cs, covered);
      if (e > from) {
        self -= e - from;
        covered = e;
      }
    }
    fn(i, self);
  }
}

int64_t SliceColumns::SelfTime(uint32_t i) const {
  int64_t self = 0;
  ForEachSelfTime(i, i + 1, [&](uint32_t, int64_t s) { self = s; });
  return self;
}

void SliceColumns::RemapNames(std::span<const uint32_t> remap) {
  names_.Remap(remap);
}

size_t SliceColumns::resident_bytes() const {
  return block_base_.capacity() * sizeof(int64_t) +
         start_offsets_.capacity() * sizeof(uint32_t) +
         start_overflow_.capacity() * sizeof(Side::value_type) +
         durations_.capacity() * sizeof(uint32_t) +
         duration_overflow_.capacity() * sizeof(Side::value_type) +
         names_.resident_bytes() + depth_begin_.capacity() * sizeof(uint32_t) +
         bucket_starts_.capacity() * sizeof(int64_t) +
         longest_.resident_bytes() + covered_.resident_bytes() +
         self_.capacity() * sizeof(int64_t);
}

}  // namespace podscope::viewer
