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

}  // namespace

std::vector<VisibleSlice> QuerySlices(const SliceColumns& slices, int64_t t0,
                                      int64_t t1, uint32_t pixels) {
  std::vector<VisibleSlice> out;
  if (t1 <= t0 || pixels == 0) return out;
  const PixelGrid grid(t0, t1, pixels);
  std::vector<uint32_t> picked;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (uint32_t d = 0; d < slices.depth_count(); ++d) {
    // The depth's slices that touch the window: one run, as starts and
    // ends both ascend.
    const uint32_t lo =
        slices.FirstEndingAfter(slices.depth_begin(d), slices.depth_end(d), t0);
    const uint32_t hi =
        slices.FirstStartingAtOrAfter(lo, slices.depth_end(d), t1);
    if (lo >= hi) continue;
    picked.clear();
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
      picked.push_back(m);
      ranges.push_back({l, m});
      ranges.push_back({m + 1, r});
    }
    // The longest slice of each occupied pixel. The slices touching pixel
    // p are the run [a, b); empty pixels are skipped by jumping to the
    // pixel of the next start.
    uint32_t p = grid.PixelOf(std::max(slices.start(lo), t0));
    uint32_t prev_a = lo, prev_b = lo;
    while (true) {
      const int64_t from = grid.Bound(p);
      const int64_t to = grid.Bound(p + 1);
      // Covered ends ascend, and the previous pixel's b (the first slice
      // starting at or after its end, which is `from`) ends after `from`:
      // so a lies in [prev_a, prev_b], usually just before prev_b, where a
      // backward search finds it in a probe or two.
      const uint32_t a =
          GallopBack(prev_a, std::max(prev_a, prev_b),
                     [&](uint32_t i) { return slices.covered_end(i) > from; });
      // The run is probably about as long as the previous pixel's.
      const uint32_t b_lo = std::max(a, prev_b);
      const uint32_t guess = static_cast<uint32_t>(
          std::min<uint64_t>(uint64_t{b_lo} + (prev_b - prev_a), hi));
      const uint32_t b = GallopFrom(
          b_lo, hi, guess, [&](uint32_t i) { return slices.start(i) >= to; });
      // Where the next two pixels' runs probably end.
      slices.Prefetch(
          static_cast<uint32_t>(std::min<uint64_t>(uint64_t{b} + (b - a), hi)));
      slices.Prefetch(static_cast<uint32_t>(
          std::min<uint64_t>(uint64_t{b} + 2 * uint64_t{b - a}, hi)));
      prev_a = a;
      prev_b = b;
      if (a < b) {
        picked.push_back(slices.Longest(a, b));
        if (slices.covered_end(b - 1) > to) {
          // Slices go on into the next pixels. Until slice a ends or slice
          // b starts, those pixels touch the same run, so the same slice
          // is their longest: skip to where either happens.
          const int64_t a_last = slices.covered_end(a) - 1;
          uint32_t next = a_last >= t1 ? pixels : grid.PixelOf(a_last) + 1;
          if (b < hi) next = std::min(next, grid.PixelOf(slices.start(b)));
          next = std::max(next, p + 1);
          if (next >= pixels) break;
          p = next;
          continue;
        }
      }
      if (b >= hi) break;
      p = grid.PixelOf(slices.start(b));
    }
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    for (uint32_t i : picked) {
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
