#include "podscope/viewer/lod.h"

#include <algorithm>

namespace podscope::viewer {
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
  const uint32_t k = GallopFrom(
      kl, kh, std::clamp(guess / kB, kl, kh),
      [&](uint32_t b) { return c.bucket_start(b) >= t; });
  // Slice k * kB starts at or after t (or is hi); slice (k - 1) * kB
  // before it (or is before lo).
  const uint32_t from = k > kl ? (k - 1) * kB : lo;
  const uint32_t to = k < kh ? k * kB : hi;
  return c.FirstStartingInBucket(from, to, t);
}

// The sweep over one depth's pixels that finds the longest slice of each
// occupied pixel. The slices touching pixel p are the run [a, b); empty
// pixels are skipped by jumping to the pixel of the next start. Each Step()
// does one pixel.
class PixelSweep {
 public:
  PixelSweep(const SliceColumns& slices, const PixelGrid& grid, int64_t t0,
             int64_t t1, uint32_t lo, uint32_t hi,
             std::vector<uint32_t>* picked)
      : slices_(&slices),
        grid_(&grid),
        t1_(t1),
        hi_(hi),
        p_(grid.PixelOf(std::max(slices.start(lo), t0))),
        prev_a_(lo),
        prev_b_(lo),
        picked_(picked) {}

  // One pixel; false when the sweep is done.
  bool Step() {
    const uint32_t pixels = grid_->pixels();
    const int64_t from = grid_->Bound(p_);
    const int64_t to = grid_->Bound(p_ + 1);
    // Covered ends ascend, and the previous pixel's b (the first slice
    // starting at or after its end, which is `from`) ends after `from`:
    // so a lies in [prev_a, prev_b], usually just before prev_b, where a
    // backward search finds it in a probe or two.
    const uint32_t a =
        GallopBack(prev_a_, std::max(prev_a_, prev_b_),
                   [&](uint32_t i) { return slices_->covered_end(i) > from; });
    // The run is probably about as long as the previous pixel's.
    const uint32_t b_lo = std::max(a, prev_b_);
    const uint32_t guess = static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t{b_lo} + (prev_b_ - prev_a_), hi_));
    const uint32_t b = FirstStartingFrom(*slices_, b_lo, hi_, guess, to);
    // Where the next pixel's run probably ends.
    const uint32_t next_b = static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t{b} + (b - a), hi_));
    slices_->Prefetch(next_b);
    slices_->PrefetchBucket(next_b / kB);
    prev_a_ = a;
    prev_b_ = b;
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
  const SliceColumns* slices_;
  const PixelGrid* grid_;
  int64_t t1_;
  uint32_t hi_;
  uint32_t p_;
  uint32_t prev_a_, prev_b_;
  std::vector<uint32_t>* picked_;
};

}  // namespace

std::vector<VisibleSlice> QuerySlices(const SliceColumns& slices, int64_t t0,
                                      int64_t t1, uint32_t pixels) {
  std::vector<VisibleSlice> out;
  if (t1 <= t0 || pixels == 0) return out;
  const PixelGrid grid(t0, t1, pixels);
  const uint32_t depths = slices.depth_count();
  std::vector<std::vector<uint32_t>> picked(depths);
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (uint32_t d = 0; d < depths; ++d) {
    // The depth's slices that touch the window: one run, as starts and
    // ends both ascend.
    const uint32_t lo =
        slices.FirstEndingAfter(slices.depth_begin(d), slices.depth_end(d), t0);
    const uint32_t hi =
        slices.FirstStartingAtOrAfter(lo, slices.depth_end(d), t1);
    if (lo >= hi) continue;
    // Every slice a pixel wide or more: split ranges at their longest
    // slice until the longest is narrower than a pixel. Costs O(log n) per
    // slice found.
    ranges.assign(1, {lo, hi});
    while (!ranges.empty()) {
      const auto [l, r] = ranges.back();
      ranges.pop_back();
      if (l >= r) continue;
      const uint32_t m = slices.Longest(l, r);
      if (!grid.Wide(slices.duration(m))) continue;
      picked[d].push_back(m);
      ranges.push_back({l, m});
      ranges.push_back({m + 1, r});
    }
    PixelSweep sweep(slices, grid, t0, t1, lo, hi, &picked[d]);
    while (sweep.Step()) {
    }
  }
  for (uint32_t d = 0; d < depths; ++d) {
    std::vector<uint32_t>& p = picked[d];
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    for (uint32_t i : p) {
      VisibleSlice v;
      v.index = i;
      v.depth = d;
      v.start_ns = slices.start(i);
      v.duration_ns = slices.duration(i);
      v.name = slices.name(i);
      v.representative = !grid.Wide(v.duration_ns);
      out.push_back(v);
    }
  }
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
