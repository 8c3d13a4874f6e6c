// Bucket indexes over a column of values.
//
// BucketTree, a range-extremum index: the best value of every aligned
// bucket of kLeaf elements, then of pairs of buckets, and so on (a mipmap,
// after Perfetto's slice_mipmap). It stores about 2 / kLeaf values per
// element (plus a byte per bucket: where its best element is) and answers
// "which element of [lo, hi) is best" in O(kLeaf + log n) without touching
// the elements in between.
//
// BucketSums, a running total at every bucket boundary (8 bytes per kLeaf
// elements): the sum of [0, i) in O(kLeaf).
#ifndef PODSCOPE_VIEWER_BUCKET_TREE_H_
#define PODSCOPE_VIEWER_BUCKET_TREE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace podscope::viewer {

// `Better(a, b)` is true when a should be preferred over b (std::greater
// for a maximum). Ties go to the lowest index.
template <typename T, typename Better>
class BucketTree {
 public:
  static constexpr size_t kLeafBits = 5;
  static constexpr size_t kLeaf = size_t{1} << kLeafBits;

  BucketTree() = default;
  explicit BucketTree(std::span<const T> values) { Build(values); }

  void Build(std::span<const T> values) {
    levels_.clear();
    leaf_arg_.clear();
    size_t n = (values.size() + kLeaf - 1) / kLeaf;
    if (n == 0) return;
    std::vector<T> level(n);
    leaf_arg_.resize(n);
    for (size_t b = 0; b < n; ++b) {
      const size_t lo = b * kLeaf;
      const size_t hi = std::min(values.size(), lo + kLeaf);
      T best = values[lo];
      size_t at = lo;
      for (size_t i = lo + 1; i < hi; ++i) {
        if (better_(values[i], best)) best = values[i], at = i;
      }
      level[b] = best;
      leaf_arg_[b] = static_cast<uint8_t>(at - lo);
    }
    levels_.push_back(std::move(level));
    while (levels_.back().size() > 1) {
      const std::vector<T>& below = levels_.back();
      std::vector<T> up((below.size() + 1) / 2);
      for (size_t j = 0; j < up.size(); ++j) {
        const T& a = below[2 * j];
        up[j] = (2 * j + 1 < below.size() && better_(below[2 * j + 1], a))
                    ? below[2 * j + 1]
                    : a;
      }
      levels_.push_back(std::move(up));
    }
    levels_.front().shrink_to_fit();
  }

  // The index of the best value in [lo, hi) of `values` (the column the
  // tree was built from); `hi` when the range is empty.
  size_t Best(std::span<const T> values, size_t lo, size_t hi) const {
    if (lo >= hi) return hi;
    size_t best = hi;
    // The best of [a, b) against the best so far; the first of equals wins.
    auto scan = [&](size_t a, size_t b) {
      if (a >= b) return;
      const size_t found = ArgBest(values.data(), a, b);
      if (best == hi || better_(values[found], values[best])) best = found;
    };
    size_t bl = (lo + kLeaf - 1) >> kLeafBits;  // first whole bucket
    size_t bh = hi >> kLeafBits;                // one past the last
    if (bl >= bh || levels_.empty()) {
      scan(lo, hi);
      return best;
    }
    scan(lo, bl << kLeafBits);
    if (bh - bl <= kLinearBuckets) {
      // A few whole buckets: one pass over their adjacent bucket values
      // reads fewer cache lines than the walk up and down the levels, and
      // consecutive queries over neighbouring ranges stream through them.
      const size_t node = BestBucket(bl, bh);
      // Left of the buckets only lower indices were scanned: equal values
      // keep the earlier one.
      if (best == hi || better_(levels_[0][node], values[best])) {
        best = bucket_best(node);
      }
      scan(bh << kLeafBits, hi);
      return best;
    }
    // Whole buckets: a segment-tree walk over the levels.
    size_t node_level = 0, node = SIZE_MAX;
    const T* node_value = nullptr;
    auto consider = [&](size_t lev, size_t j) {
      const T& v = levels_[lev][j];
      if (node_value == nullptr || better_(v, *node_value) ||
          (!better_(*node_value, v) && (j << lev) < (node << node_level))) {
        node_value = &v;
        node = j;
        node_level = lev;
      }
    };
    size_t l = bl, r = bh;
    for (size_t lev = 0; l < r; ++lev, l >>= 1, r >>= 1) {
      if (l & 1) consider(lev, l++);
      if (r & 1) consider(lev, --r);
    }
    // Down to the bucket that holds the node's value, then to the element.
    while (node_level > 0) {
      const std::vector<T>& below = levels_[node_level - 1];
      node = 2 * node;
      if (better_(*node_value, below[node])) ++node;
      --node_level;
    }
    const size_t found = (node << kLeafBits) + leaf_arg_[node];
    if (best == hi || better_(values[found], values[best]) ||
        (!better_(values[best], values[found]) && found < best)) {
      best = found;
    }
    scan(bh << kLeafBits, hi);
    return best;
  }

  // The best value of bucket k (elements [k * kLeaf, (k + 1) * kLeaf)),
  // and the index of the element that holds it.
  const T& bucket_value(size_t k) const { return levels_[0][k]; }
  size_t bucket_best(size_t k) const { return (k << kLeafBits) + leaf_arg_[k]; }
  // The first bucket of [k0, k1) (non-empty) whose value is best.
  size_t BestBucket(size_t k0, size_t k1) const {
    return ArgBest(levels_[0].data(), k0, k1);
  }

  size_t resident_bytes() const {
    size_t bytes = 0;
    for (const auto& l : levels_) bytes += l.capacity() * sizeof(T);
    return bytes + leaf_arg_.capacity();
  }

 private:
  // The index of the best of data[a, b) (a < b), the first of equals; the
  // running best value stays in a register.
  size_t ArgBest(const T* data, size_t a, size_t b) const {
    size_t found = a;
    T value = data[a];
    for (size_t i = a + 1; i < b; ++i) {
      const T v = data[i];
      const bool take = better_(v, value);
      value = take ? v : value;
      found = take ? i : found;
    }
    return found;
  }

  // Whole-bucket ranges up to this long are scanned rather than walked.
  static constexpr size_t kLinearBuckets = 256;
  std::vector<std::vector<T>> levels_;
  // Where in its bucket each bucket's best value is (the first of equals).
  std::vector<uint8_t> leaf_arg_;
  [[no_unique_address]] Better better_;
};

// Sums of a column of non-negative integers at every kLeaf-th element. The
// totals are kept modulo 2^64, so the sum of any range whose true sum fits
// in 64 bits (Prefix(hi) - Prefix(lo)) is exact however large the whole
// column's sum is.
class BucketSums {
 public:
  static constexpr size_t kLeafBits = 5;
  static constexpr size_t kLeaf = size_t{1} << kLeafBits;

  // `value(i)` is element i of the n-element column, as a uint64_t.
  template <typename Value>
  void Build(size_t n, const Value& value) {
    n_ = n;
    totals_.assign(n / kLeaf + 1, 0);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) {
      if ((i & (kLeaf - 1)) == 0) totals_[i >> kLeafBits] = sum;
      sum += value(i);
    }
    if ((n & (kLeaf - 1)) == 0) totals_[n >> kLeafBits] = sum;
  }

  // The sum of elements [0, i) (i at most n), modulo 2^64; `value` as for
  // Build. Reads one total and at most kLeaf / 2 elements: from the total
  // at or before i up, or from the next one down, whichever is nearer.
  template <typename Value>
  uint64_t Prefix(size_t i, const Value& value) const {
    if (totals_.empty()) return 0;
    const size_t k = i >> kLeafBits;
    const size_t next = (k + 1) << kLeafBits;
    if (i - (k << kLeafBits) > kLeaf / 2 && next <= n_) {
      uint64_t sum = totals_[k + 1];
      for (size_t j = i; j < next; ++j) sum -= value(j);
      return sum;
    }
    uint64_t sum = totals_[k];
    for (size_t j = k << kLeafBits; j < i; ++j) sum += value(j);
    return sum;
  }

  // A hint that Prefix(i) will soon be called for an i in the bucket of
  // element `near` or at its end: the totals it may read.
  [[gnu::always_inline]] void Prefetch(size_t near) const {
    const size_t k = near >> kLeafBits;
    if (k < totals_.size()) __builtin_prefetch(&totals_[k]);
    if (k + 1 < totals_.size()) __builtin_prefetch(&totals_[k + 1]);
  }

  size_t resident_bytes() const {
    return totals_.capacity() * sizeof(uint64_t);
  }

 private:
  std::vector<uint64_t> totals_;  // totals_[k]: the sum of [0, k * kLeaf)
  size_t n_ = 0;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_BUCKET_TREE_H_
