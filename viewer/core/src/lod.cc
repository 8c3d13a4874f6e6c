#include "podscope/viewer/lod.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

namespace podscope::viewer {
namespace internal {

// QuerySlices' buffers, reused from depth to depth (and, in a
// SliceQueryScratch, from query to query).
struct DepthScratch {
  std::vector<uint32_t> wide, picked;
  std::vector<VisibleSlice> swept;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  std::vector<uint32_t> next;
  std::vector<float> shares;
};

}  // namespace internal
namespace {

// The first index in [lo, hi) where `reached` (false, then true) holds,
// searching outwards from lo: O(log distance) rather than O(log n), as
// consecutive pixels' runs lie close together.
template <typename Reached>
uint32_t Gallop(uint32_t lo, uint32_t hi, const Reached& reached) {
  if (lo >= hi || reached(lo)) return lo;
  uint32_t below = lo;  // reached(below) is false
  uint64_t step = 1;
  uint32_t above = hi;
  while (true) {
    const uint64_t probe = below + step;
    if (probe >= hi) break;
    if (reached(static_cast<uint32_t>(probe))) {
      above = static_cast<uint32_t>(probe);
      break;
    }
    below = static_cast<uint32_t>(probe);
    step *= 2;
  }
  lo = below + 1;
  hi = above;
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (reached(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The first index in [lo, hi] where `reached` (false, then true) holds,
// searching backwards from hi, where it is known to hold (or which is the
// end of the range): O(log distance from hi).
template <typename Reached>
uint32_t GallopBack(uint32_t lo, uint32_t hi, const Reached& reached) {
  if (hi <= lo || !reached(hi - 1)) return hi;
  uint32_t above = hi - 1;  // reached(above) holds
  uint32_t below = lo;      // the answer is in [below, above]
  uint64_t step = 1;
  while (above - lo >= step) {
    const uint32_t probe = above - static_cast<uint32_t>(step);
    if (!reached(probe)) {
      below = probe + 1;
      break;
    }
    above = probe;
    step *= 2;
  }
  while (below < above) {
    const uint32_t mid = below + (above - below) / 2;
    if (reached(mid)) {
      above = mid;
    } else {
      below = mid + 1;
    }
  }
  return below;
}

// The first index in [lo, hi) where `reached` (false, then true) holds,
// searching outwards from `guess`: when the guess is close, the probes stay
// in a few cache lines around it.
template <typename Reached>
uint32_t GallopFrom(uint32_t lo, uint32_t hi, uint32_t guess,
                    const Reached& reached) {
  if (guess <= lo) return Gallop(lo, hi, reached);
  if (guess >= hi) return GallopBack(lo, hi, reached);
  if (reached(guess)) return GallopBack(lo, guess, reached);
  return Gallop(guess + 1, hi, reached);
}

// The first slice in [lo, hi) of one depth that starts at or after t (hi
// if none), searching the dense bucket starts outwards from guess's bucket
// first and then one bucket's slices: a few cache lines however far the
// guess is off, where probing the slices themselves would miss on each.
uint32_t FirstStartingFrom(const SliceColumns& c, uint32_t lo, uint32_t hi,
                           uint32_t guess, int64_t t) {
  constexpr uint32_t kB = SliceColumns::kStartBucket;
  auto starts_by = [&](uint32_t i) { return c.start(i) >= t; };
  if (hi - lo <= 2 * kB) return GallopFrom(lo, hi, guess, starts_by);
  // The buckets whose first slice lies in [lo, hi); their starts ascend.
  const uint32_t kl = static_cast<uint32_t>((uint64_t{lo} + kB - 1) / kB);
  const uint32_t kh = static_cast<uint32_t>((uint64_t{hi} + kB - 1) / kB);
  const uint32_t k =
      GallopFrom(kl, kh, std::clamp(guess / kB, kl, kh),
                 [&](uint32_t b) { return c.bucket_start(b) >= t; });
  // Slice k * kB starts at or after t (or is hi); slice (k - 1) * kB
  // before it (or is before lo).
  const uint32_t from = k > kl ? (k - 1) * kB : lo;
  const uint32_t to = k < kh ? k * kB : hi;
  return c.FirstStartingInBucket(from, to, t);
}

// The bounds of one depth's pixels, walked in time order: for each bound
// Bound(q), q in [0, pixels], next[q] is the first slice of [lo, hi) that
// starts at or after it (hi if none), and with `busy` (pixels entries)
// busy[q - 1] is pixel q - 1's share as QueryBusy defines it; then
// on_bound(q) is called, which may read them. [lo, hi) is the whole depth,
// or the run of it that touches the window. Two stages kAhead bounds
// apart: the first finds a bound's bucket in the dense bucket starts and
// fetches that bucket's slices, the second reads them to finish the bound,
// so the cache misses of several bounds are in flight at once rather than
// one after another.
template <typename OnBound>
void WalkBounds(const SliceColumns& c, uint32_t lo, uint32_t hi,
                const PixelGrid& grid, uint32_t* next, float* busy,
                const OnBound& on_bound) {
  constexpr uint32_t kB = SliceColumns::kStartBucket;
  constexpr uint32_t kAhead = 8;
  const uint32_t bounds = grid.pixels() + 1;
  const uint32_t kl = static_cast<uint32_t>((uint64_t{lo} + kB - 1) / kB);
  const uint32_t kh = static_cast<uint32_t>((uint64_t{hi} + kB - 1) / kB);
  // A located bound: its time, and the slices [from, to) that hold its
  // first slice starting at or after it (or `to` is that slice).
  struct Located {
    int64_t t;
    uint32_t from, to;
  };
  std::array<Located, kAhead> ring;
  uint32_t k = kl;    // the last located bound's bucket
  uint32_t step = 0;  // how many buckets it moved past
  auto locate = [&](uint32_t q) {
    const int64_t t = grid.Bound(q);
    // Neighbouring pixels span about as many buckets: search from there.
    const uint32_t guess =
        static_cast<uint32_t>(std::min<uint64_t>(uint64_t{k} + step, kh));
    const uint32_t found = GallopFrom(
        k, kh, guess, [&](uint32_t b) { return c.bucket_start(b) >= t; });
    step = found - k;
    k = found;
    // Slice k * kB starts at or after t (or is hi); slice (k - 1) * kB
    // before it (or is before lo).
    Located& l = ring[q % kAhead];
    l.t = t;
    l.from = k > kl ? (k - 1) * kB : lo;
    l.to = k < kh ? k * kB : hi;
    c.PrefetchRun(l.from, l.to);
  };
  for (uint32_t q = 0; q < std::min(kAhead, bounds); ++q) locate(q);
  // QueryBusy's running state: the time covered before `from` (modulo
  // 2^64), the first slice starting at or after `from` and the running
  // total before it. Only slice at - 1 can reach past `from`.
  auto past = [&](int64_t t, uint32_t i) -> uint64_t {
    if (i > lo) {
      const int64_t e = c.covered_end(i - 1);
      if (e > t) return static_cast<uint64_t>(e) - static_cast<uint64_t>(t);
    }
    return 0;
  };
  int64_t from = 0;
  uint32_t at = lo;
  uint64_t total_at = 0;
  uint64_t before = 0;
  // Pixel q - 1's share, once next[q] is known.
  auto share = [&](int64_t to, uint32_t n) -> float {
    if (to <= from) return 0.0f;  // a pixel of no time
    uint64_t covered;
    if (n == at) {
      // No slice starts in the pixel: only slice at - 1 (which started
      // before it) can cover part of it.
      covered = 0;
      if (at > lo) {
        const int64_t e = std::min(c.covered_end(at - 1), to);
        if (e > from) covered = static_cast<uint64_t>(e - from);
      }
      before += covered;
    } else {
      // The running total before n: added on from at's when few slices
      // lie between (sparse pixels), else from the stored totals.
      uint64_t total_n;
      if (n - at < 8) {
        total_n = total_at;
        for (uint32_t i = at; i < n; ++i) total_n += c.covered_length(i);
      } else {
        total_n = c.CoveredBefore(n);
      }
      const uint64_t now = total_n - past(to, n);
      covered = now - before;
      before = now;
      at = n;
      total_at = total_n;
    }
    const double busy_share =
        static_cast<double>(covered) / static_cast<double>(to - from);
    from = to;
    return static_cast<float>(std::min(busy_share, 1.0));
  };
  for (uint32_t q = 0; q < bounds; ++q) {
    const Located l = ring[q % kAhead];
    if (q + kAhead < bounds) locate(q + kAhead);
    const uint32_t n = c.FirstStartingInBucket(l.from, l.to, l.t);
    next[q] = n;
    if (busy != nullptr) {
      if (q == 0) {
        from = l.t;
        at = n;
        total_at = c.CoveredBefore(n);
        before = total_at - past(from, n);
      } else {
        busy[q - 1] = share(l.t, n);
      }
    }
    on_bound(q);
  }
}

// The sweep over one depth's pixels that finds the longest slice of each
// occupied pixel. The slices touching pixel p are the run [a, b); empty
// pixels are skipped by jumping to the pixel of the next start. Each Step()
// does one pixel. With `next` (WalkBounds' first slice at or after each
// pixel bound), b and the buckets of a dense pixel are read from it rather
// than searched for.
class PixelSweep {
 public:
  PixelSweep(const SliceColumns& slices, const PixelGrid& grid, int64_t t0,
             int64_t t1, uint32_t lo, uint32_t hi, const uint32_t* next,
             std::vector<uint32_t>* picked)
      : slices_(&slices),
        grid_(&grid),
        t1_(t1),
        lo_(lo),
        hi_(hi),
        p_(grid.PixelOf(std::max(slices.start(lo), t0))),
        a_lo_(lo),
        a_hi_(lo),
        b_lo_(lo),
        kl_(static_cast<uint32_t>((uint64_t{lo} + kB - 1) / kB)),
        kh_(static_cast<uint32_t>((uint64_t{hi} + kB - 1) / kB)),
        next_(next),
        picked_(picked) {}

  // The pixel the next Step() does.
  uint32_t pixel() const { return p_; }

  // One pixel; false when the sweep is done.
  bool Step() {
    const uint32_t pixels = grid_->pixels();
    const int64_t from = grid_->Bound(p_);
    const int64_t to = grid_->Bound(p_ + 1);
    if (Dense(from, to)) {
      ++p_;
      return p_ < pixels;
    }
    // Covered ends ascend, and a_hi (the previous pixel's b: the first
    // slice starting at or after its end, which is `from`) ends after
    // `from`: so a lies in [a_lo, a_hi], usually just before a_hi, where a
    // backward search finds it in a probe or two.
    const uint32_t a =
        GallopBack(a_lo_, std::max(a_lo_, a_hi_),
                   [&](uint32_t i) { return slices_->covered_end(i) > from; });
    uint32_t b;
    if (next_ != nullptr) {
      b = next_[p_ + 1];
    } else {
      // The run is probably about as long as the previous pixel's.
      const uint32_t b_lo = std::max(a, b_lo_);
      const uint32_t guess =
          static_cast<uint32_t>(std::min<uint64_t>(uint64_t{b_lo} + run_, hi_));
      b = FirstStartingFrom(*slices_, b_lo, hi_, guess, to);
      // Where the next pixel's run probably ends.
      const uint32_t next_b =
          static_cast<uint32_t>(std::min<uint64_t>(uint64_t{b} + (b - a), hi_));
      slices_->Prefetch(next_b);
      slices_->PrefetchBucket(next_b / kB);
    }
    a_lo_ = a;
    a_hi_ = b;
    b_lo_ = b;
    run_ = b - a;
    if (a < b) {
      const uint32_t longest = slices_->Longest(a, b);
      // Read again when the results are written out: fetch it now.
      slices_->Prefetch(longest);
      picked_->push_back(longest);
      if (slices_->covered_end(b - 1) > to) {
        // Slices go on into the next pixels. Until slice a ends or slice b
        // starts, those pixels touch the same run, so the same slice is
        // their longest: skip to where either happens.
        const int64_t a_last = slices_->covered_end(a) - 1;
        uint32_t next = a_last >= t1_ ? pixels : grid_->PixelOf(a_last) + 1;
        if (b < hi_) next = std::min(next, grid_->PixelOf(slices_->start(b)));
        next = std::max(next, p_ + 1);
        if (next >= pixels) return false;
        p_ = next;
        return true;
      }
    }
    if (b >= hi_) return false;
    p_ = grid_->PixelOf(slices_->start(b));
    return true;
  }

 private:
  static constexpr uint32_t kB = SliceColumns::kStartBucket;
  // Whole buckets a pixel must span for the dense case.
  static constexpr uint32_t kMinInner = 4;

  // A pixel that spans several whole buckets of the depth: when the
  // longest slice of those buckets is at least as long as any slice of the
  // two buckets at its edges (their precomputed longest), it is a longest
  // slice of the pixel, found without reading a slice or finding the run's
  // exact ends. False (and nothing done) when that cannot be told so.
  bool Dense(int64_t from, int64_t to) {
    if (kh_ < kl_ + kMinInner + 2) return false;
    auto starts_by = [&](int64_t t) {
      return [this, t](uint32_t k) { return slices_->bucket_start(k) >= t; };
    };
    // The depth's buckets whose first slice starts at or after each end:
    // those at or after the first slice that does.
    uint32_t kf, kt;
    if (next_ != nullptr) {
      kf = static_cast<uint32_t>((uint64_t{next_[p_]} + kB - 1) / kB);
      kt = static_cast<uint32_t>((uint64_t{next_[p_ + 1]} + kB - 1) / kB);
    } else {
      kf = from == last_to_ ? last_kt_ : Gallop(kl_, kh_, starts_by(from));
      kt = Gallop(kf, kh_, starts_by(to));
      last_to_ = to;
      last_kt_ = kt;
    }
    // Buckets [kf, kt - 1) hold only slices of the depth that start in
    // [from, to); bucket kt - 1 holds the slices around `to`, kf - 1 those
    // around `from`, and no slice after bucket kt - 1 touches the pixel.
    if (kt < kf + 1 + kMinInner) return false;
    uint32_t edge = slices_->bucket_longest(kt - 1);
    if (kf > 0) {
      const uint32_t first = (kf - 1) * kB;
      // Slices before bucket kf - 1 touch the pixel only if the last of
      // them covers `from` (covered ends ascend): then go the exact way.
      // It starts by bucket kf - 1's start and is no longer than its
      // bucket's longest, which mostly settles it without reading it.
      if (first > lo_) {
        const uint32_t before = slices_->bucket_longest(kf - 2);
        int64_t reach;
        const bool short_enough =
            before != SliceColumns::kSaturated &&
            !__builtin_add_overflow(slices_->bucket_start(kf - 1),
                                    std::max<int64_t>(before, 1), &reach) &&
            reach <= from;
        if (!short_enough && slices_->covered_end(first - 1) > from) {
          return false;
        }
      }
      edge = std::max(edge, slices_->bucket_longest(kf - 1));
    }
    const uint32_t m = slices_->LongestOfBuckets(kf, kt - 1);
    const uint32_t longest = slices_->bucket_longest(m / kB);
    if (longest == SliceColumns::kSaturated || longest < edge) return false;
    slices_->Prefetch(m);
    picked_->push_back(m);
    // Bounds for the next pixel's exact search: its a is at or after this
    // pixel's (at or after bucket kf - 1) and at or before the first slice
    // starting at or after `to`; its b at or after bucket kt - 1.
    a_lo_ = kf > 0 ? std::max(lo_, (kf - 1) * kB) : lo_;
    a_hi_ = kt < kh_ ? kt * kB : hi_;
    b_lo_ = std::max(lo_, (kt - 1) * kB);
    run_ = (kt - kf) * kB;
    return true;
  }

  const SliceColumns* slices_;
  const PixelGrid* grid_;
  int64_t t1_;
  uint32_t lo_, hi_;
  uint32_t p_;
  // Bounds of the next pixel's run: a in [a_lo, a_hi], b >= b_lo; run_ is
  // the last run's length, the guess for the next.
  uint32_t a_lo_, a_hi_, b_lo_;
  uint32_t run_ = 0;
  // The depth's buckets whose first slice lies in [lo, hi).
  uint32_t kl_, kh_;
  int64_t last_to_ = std::numeric_limits<int64_t>::min();
  uint32_t last_kt_ = 0;
  const uint32_t* next_;
  std::vector<uint32_t>* picked_;
};

using internal::DepthScratch;

inline VisibleSlice Visible(const SliceColumns& slices, const PixelGrid& grid,
                            uint32_t i, uint32_t d) {
  VisibleSlice v;
  v.index = i;
  v.depth = d;
  v.start_ns = slices.start(i);
  v.duration_ns = slices.duration(i);
  v.name = slices.name(i);
  v.representative = !grid.Wide(v.duration_ns);
  return v;
}

// Every slice of [lo, hi) a pixel wide or more, by index, into s->wide:
// split ranges at their longest slice until the longest is narrower than a
// pixel. Costs O(log n) per slice found.
inline void FindWide(const SliceColumns& slices, const PixelGrid& grid,
                     uint32_t lo, uint32_t hi, DepthScratch* s) {
  s->wide.clear();
  s->ranges.assign(1, {lo, hi});
  while (!s->ranges.empty()) {
    const auto [l, r] = s->ranges.back();
    s->ranges.pop_back();
    if (l >= r) continue;
    const uint32_t m = slices.Longest(l, r);
    if (!grid.Wide(slices.duration(m))) continue;
    s->wide.push_back(m);
    s->ranges.push_back({l, m});
    s->ranges.push_back({m + 1, r});
  }
  std::sort(s->wide.begin(), s->wide.end());
}

// The slice each pixel of [t0, t1) shows at depth d, [lo, hi) being the
// depth's slices that touch the window, into s->swept by index, each once.
// With `busy`, also each pixel's busy share into s->shares when the pixels
// were walked; returns whether they were.
inline bool SweepPixels(const SliceColumns& slices, const PixelGrid& grid,
                        int64_t t0, int64_t t1, uint32_t lo, uint32_t hi,
                        uint32_t pixels, uint32_t d, bool busy,
                        DepthScratch* s) {
  // The sweep picks pixel by pixel, so its picks ascend (a slice may
  // repeat). Each pick was fetched when picked; it is read a few picks
  // later, by when it has arrived.
  std::vector<uint32_t>& picked = s->picked;
  std::vector<VisibleSlice>& swept = s->swept;
  picked.clear();
  swept.clear();
  size_t read = 0;
  auto read_picks = [&](size_t upto) {
    for (; read < upto; ++read) {
      const uint32_t i = picked[read];
      if (swept.empty() || swept.back().index != i) {
        swept.push_back(Visible(slices, grid, i, d));
      }
    }
  };
  constexpr size_t kPickLag = 8;
  // Where the depth has a slice or more per pixel, most pixels are
  // occupied: every pixel bound is walked once, and each pixel swept
  // (and its busy share worked out) as soon as its bounds are known,
  // while the slices around them are in cache. Sparser depths are swept
  // from occupied pixel to occupied pixel.
  const bool walk = hi - lo >= pixels;
  if (walk) {
    s->next.resize(size_t{pixels} + 1);
    if (busy) s->shares.resize(pixels);
    PixelSweep sweep(slices, grid, t0, t1, lo, hi, s->next.data(), &picked);
    bool sweeping = true;
    WalkBounds(slices, lo, hi, grid, s->next.data(),
               busy ? s->shares.data() : nullptr, [&](uint32_t q) {
                 while (sweeping && sweep.pixel() < q) {
                   sweeping = sweep.Step();
                 }
                 if (picked.size() > read + kPickLag) {
                   read_picks(picked.size() - kPickLag);
                 }
               });
  } else {
    PixelSweep sweep(slices, grid, t0, t1, lo, hi, nullptr, &picked);
    while (sweep.Step()) {
    }
  }
  read_picks(picked.size());
  auto by_index = [](const VisibleSlice& a, const VisibleSlice& b) {
    return a.index < b.index;
  };
  if (!std::is_sorted(swept.begin(), swept.end(), by_index)) {
    std::sort(swept.begin(), swept.end(), by_index);
    swept.erase(std::unique(swept.begin(), swept.end(),
                            [](const VisibleSlice& a, const VisibleSlice& b) {
                              return a.index == b.index;
                            }),
                swept.end());
  }
  return walk;
}

// Appends the swept slices with the few wide ones merged in, each slice
// once, by index. Returns whether any is narrower than a pixel.
inline bool MergeWide(const SliceColumns& slices, const PixelGrid& grid,
                      uint32_t d, const DepthScratch& s,
                      std::vector<VisibleSlice>* out) {
  bool sub_pixel = false;
  auto emit = [&](const VisibleSlice& v) {
    sub_pixel |= v.representative;
    out->push_back(v);
  };
  auto w = s.wide.begin();
  for (const VisibleSlice& v : s.swept) {
    for (; w != s.wide.end() && *w < v.index; ++w) {
      emit(Visible(slices, grid, *w, d));
    }
    if (w != s.wide.end() && *w == v.index) ++w;
    emit(v);
  }
  for (; w != s.wide.end(); ++w) emit(Visible(slices, grid, *w, d));
  return sub_pixel;
}

}  // namespace

SliceQueryScratch::SliceQueryScratch()
    : s_(std::make_unique<internal::DepthScratch>()) {}
SliceQueryScratch::~SliceQueryScratch() = default;
SliceQueryScratch::SliceQueryScratch(SliceQueryScratch&&) noexcept = default;
SliceQueryScratch& SliceQueryScratch::operator=(SliceQueryScratch&&) noexcept =
    default;

namespace {

// `v` able to hold `n` elements, every page of its room written once.
template <typename T>
void Touch(std::vector<T>* v, size_t n) {
  if (v->capacity() >= n) return;
  v->clear();
  v->resize(n);
  v->clear();
}

}  // namespace

void SliceQueryScratch::Reserve(uint32_t pixels) {
  const size_t n = size_t{pixels} + 1;
  Touch(&s_->wide, n);
  Touch(&s_->picked, n);
  Touch(&s_->swept, n);
  Touch(&s_->next, n);
  Touch(&s_->shares, n);
  Touch(&s_->ranges, 64);
}

void ReserveSliceQuery(uint32_t pixels, uint32_t depths,
                       std::vector<VisibleSlice>* out,
                       std::vector<std::vector<float>>* busy) {
  Touch(out, size_t{pixels} * depths);
  if (busy == nullptr) return;
  if (busy->size() < depths) busy->resize(depths);
  for (uint32_t d = 0; d < depths; ++d) Touch(&(*busy)[d], pixels);
}

namespace {

// QueryBusy into `out`, reusing its room and `next`'s.
void BusyInto(const SliceColumns& slices, uint32_t depth, int64_t t0,
              int64_t t1, uint32_t pixels, std::vector<float>* out,
              std::vector<uint32_t>* next) {
  out->clear();
  if (t1 <= t0 || pixels == 0 || depth >= slices.depth_count()) return;
  out->assign(pixels, 0.0f);
  const uint32_t lo = slices.depth_begin(depth);
  const uint32_t hi = slices.depth_end(depth);
  if (lo >= hi) return;
  next->resize(size_t{pixels} + 1);
  WalkBounds(slices, lo, hi, PixelGrid(t0, t1, pixels), next->data(),
             out->data(), [](uint32_t) {});
}

}  // namespace

std::vector<VisibleSlice> QuerySlices(const SliceColumns& slices, int64_t t0,
                                      int64_t t1, uint32_t pixels,
                                      std::vector<std::vector<float>>* busy) {
  std::vector<VisibleSlice> out;
  SliceQueryScratch scratch;
  QuerySlicesInto(slices, t0, t1, pixels, &scratch, &out, busy);
  return out;
}

void QuerySlicesInto(const SliceColumns& slices, int64_t t0, int64_t t1,
                     uint32_t pixels, SliceQueryScratch* scratch_holder,
                     std::vector<VisibleSlice>* out_ptr,
                     std::vector<std::vector<float>>* busy) {
  std::vector<VisibleSlice>& out = *out_ptr;
  out.clear();
  if (busy != nullptr) {
    // Each depth's room kept for the next query.
    busy->resize(slices.depth_count());
    for (std::vector<float>& b : *busy) b.clear();
  }
  if (t1 <= t0 || pixels == 0) return;
  const PixelGrid grid(t0, t1, pixels);
  const uint32_t depths = slices.depth_count();
  DepthScratch& scratch = *scratch_holder->s_;
  for (uint32_t d = 0; d < depths; ++d) {
    // The depth's slices that touch the window: one run, as starts and
    // ends both ascend.
    const uint32_t lo =
        slices.FirstEndingAfter(slices.depth_begin(d), slices.depth_end(d), t0);
    const uint32_t hi =
        slices.FirstStartingAtOrAfter(lo, slices.depth_end(d), t1);
    if (lo >= hi) continue;
    FindWide(slices, grid, lo, hi, &scratch);
    const bool walked = SweepPixels(slices, grid, t0, t1, lo, hi, pixels, d,
                                    busy != nullptr, &scratch);
    const bool sub_pixel = MergeWide(slices, grid, d, scratch, &out);
    if (busy != nullptr && sub_pixel) {
      if (walked) {
        (*busy)[d].assign(scratch.shares.begin(), scratch.shares.end());
      } else {
        BusyInto(slices, d, t0, t1, pixels, &(*busy)[d], &scratch.next);
      }
    }
  }
}

std::vector<float> QueryBusy(const SliceColumns& slices, uint32_t depth,
                             int64_t t0, int64_t t1, uint32_t pixels) {
  std::vector<float> out;
  std::vector<uint32_t> next;
  BusyInto(slices, depth, t0, t1, pixels, &out, &next);
  return out;
}

CounterView QueryCounter(const CounterColumns& counter, int64_t t0, int64_t t1,
                         uint32_t pixels) {
  CounterView view;
  if (t1 <= t0 || pixels == 0) return view;
  const PixelGrid grid(t0, t1, pixels);
  const auto& ts = counter.ts;
  const size_t lo = std::lower_bound(ts.begin(), ts.end(), t0) - ts.begin();
  const size_t hi =
      std::lower_bound(ts.begin() + lo, ts.end(), t1) - ts.begin();
  if (lo > 0) {
    view.has_before = true;
    view.before = counter.values[lo - 1];
  }
  for (size_t i = lo; i < hi;) {
    const uint32_t p = grid.PixelOf(ts[i]);
    const size_t b =
        std::lower_bound(ts.begin() + i, ts.begin() + hi, grid.Bound(p + 1)) -
        ts.begin();
    CounterPixel px;
    px.pixel = p;
    px.count = static_cast<uint32_t>(b - i);
    px.last_index = static_cast<uint32_t>(b - 1);
    px.min = counter.values[counter.min_index.Best(counter.values, i, b)];
    px.max = counter.values[counter.max_index.Best(counter.values, i, b)];
    px.last = counter.values[b - 1];
    view.pixels.push_back(px);
    i = b;
  }
  return view;
}

std::vector<VisibleInstant> QueryInstants(const InstantColumns& instants,
                                          int64_t t0, int64_t t1,
                                          uint32_t pixels) {
  std::vector<VisibleInstant> out;
  if (t1 <= t0 || pixels == 0) return out;
  const PixelGrid grid(t0, t1, pixels);
  const auto& ts = instants.ts;
  const size_t lo = std::lower_bound(ts.begin(), ts.end(), t0) - ts.begin();
  const size_t hi =
      std::lower_bound(ts.begin() + lo, ts.end(), t1) - ts.begin();
  for (size_t i = lo; i < hi;) {
    const uint32_t p = grid.PixelOf(ts[i]);
    const size_t b =
        std::lower_bound(ts.begin() + i, ts.begin() + hi, grid.Bound(p + 1)) -
        ts.begin();
    out.push_back({static_cast<uint32_t>(i), p, static_cast<uint32_t>(b - i),
                   ts[i], instants.names[i]});
    i = b;
  }
  return out;
}

}  // namespace podscope::viewer
