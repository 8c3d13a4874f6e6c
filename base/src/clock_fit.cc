#include "podscope/base/clock_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace podscope::base {
namespace {

using Wide = __int128;

constexpr double kMaxSlope = kMaxClockDriftPpm * 1e-6;
// Offsets beyond this (about 146 years) are no real clock's.
constexpr Wide kMaxOffset = Wide{1} << 62;

int64_t CeilHalf(int64_t v) { return v / 2 + (v % 2 != 0 ? 1 : 0); }

// What the exchange adds beyond half its round trip: the rounding of the
// halves (1 ns), the four reads, and the largest drift over the exchange.
int64_t Margin(const ProbeTimes& t) {
  const double exchange = static_cast<double>(t.t4 - t.t1);
  return 1 + kClockReadGranularityNs +
         static_cast<int64_t>(std::ceil(kMaxSlope * exchange));
}

int64_t FloorHalf(Wide v) {
  const Wide h = v / 2;
  return static_cast<int64_t>(v < 0 && v % 2 != 0 ? h - 1 : h);
}

int64_t Floor(double v) {
  if (!(v > -9.2e18)) return std::numeric_limits<int64_t>::min();
  if (v > 9.2e18) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::floor(v));
}
int64_t Ceil(double v) {
  if (!(v < 9.2e18)) return std::numeric_limits<int64_t>::max();
  if (v < -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::ceil(v));
}

}  // namespace

const char* ProbeFaultName(ProbeFault fault) {
  switch (fault) {
    case ProbeFault::kNone:
      return "trusted";
    case ProbeFault::kOutOfOrder:
      return "timestamps out of order";
    case ProbeFault::kNegativeRoundTrip:
      return "negative round trip";
    case ProbeFault::kImplausiblyFast:
      return "implausibly small round trip";
    case ProbeFault::kOutOfRange:
      return "round trip or offset out of range";
  }
  return "?";
}

ProbeFault CheckProbe(const ProbeTimes& t) {
  if (t.t4 < t.t1 || t.t3 < t.t2) return ProbeFault::kOutOfOrder;
  const Wide exchange = Wide{t.t4} - t.t1;
  const Wide hold = Wide{t.t3} - t.t2;
  const Wide offset = Wide{t.t2} - t.t1;
  if (exchange > kMaxPlausibleRoundTripNs || hold > kMaxPlausibleRoundTripNs ||
      offset > kMaxOffset || offset < -kMaxOffset) {
    return ProbeFault::kOutOfRange;
  }
  const Wide rtt = exchange - hold;
  if (rtt < 0) return ProbeFault::kNegativeRoundTrip;
  if (rtt < kMinPlausibleRoundTripNs) return ProbeFault::kImplausiblyFast;
  return ProbeFault::kNone;
}

ClockSample SampleThisSideLocal(const ProbeTimes& t) {
  ClockSample s;
  s.round_trip_ns = (t.t4 - t.t1) - (t.t3 - t.t2);
  s.local_ns = t.t1 + (t.t4 - t.t1) / 2;
  s.offset_ns = FloorHalf((Wide{t.t2} - t.t1) + (Wide{t.t3} - t.t4));
  s.half_width_ns = CeilHalf(s.round_trip_ns) + Margin(t);
  return s;
}

ClockSample SamplePeerLocal(const ProbeTimes& t) {
  ClockSample s;
  s.round_trip_ns = (t.t4 - t.t1) - (t.t3 - t.t2);
  s.local_ns = t.t2 + (t.t3 - t.t2) / 2;
  s.offset_ns = FloorHalf((Wide{t.t1} - t.t2) + (Wide{t.t4} - t.t3));
  s.half_width_ns = CeilHalf(s.round_trip_ns) + Margin(t);
  return s;
}

ClockFit::ClockFit(std::vector<ClockSample> samples, size_t max_samples) {
  std::sort(samples.begin(), samples.end(),
            [](const ClockSample& a, const ClockSample& b) {
              return a.local_ns < b.local_ns;
            });
  max_samples = std::max<size_t>(max_samples, 2);
  if (samples.size() > max_samples) {
    // The narrowest sample of each of max_samples stretches of time.
    const double first = static_cast<double>(samples.front().local_ns);
    const double span =
        static_cast<double>(samples.back().local_ns) - first + 1;
    std::vector<const ClockSample*> best(max_samples, nullptr);
    for (const ClockSample& s : samples) {
      size_t b = static_cast<size_t>((static_cast<double>(s.local_ns) - first) /
                                     span * static_cast<double>(max_samples));
      b = std::min(b, max_samples - 1);
      if (best[b] == nullptr || s.half_width_ns < best[b]->half_width_ns) {
        best[b] = &s;
      }
    }
    std::vector<ClockSample> kept;
    for (const ClockSample* s : best) {
      if (s != nullptr) kept.push_back(*s);
    }
    samples = std::move(kept);
  }
  samples_ = std::move(samples);
  const size_t n = samples_.size();
  // A pair of samples bounds the slope of every line through both
  // intervals.
  auto pair = [&](size_t a, size_t b, Range* r) {
    const ClockSample& sa = samples_[a];
    const ClockSample& sb = samples_[b];
    if (sb.local_ns <= sa.local_ns) return;
    const double dx =
        static_cast<double>(sb.local_ns) - static_cast<double>(sa.local_ns);
    const double dy =
        static_cast<double>(sb.offset_ns) - static_cast<double>(sa.offset_ns);
    const double w = static_cast<double>(sa.half_width_ns) +
                     static_cast<double>(sb.half_width_ns);
    r->lo = std::max(r->lo, (dy - w) / dx);
    r->hi = std::min(r->hi, (dy + w) / dx);
  };
  prefix_slope_.assign(n, Range{-kMaxSlope, kMaxSlope});
  suffix_slope_.assign(n, Range{-kMaxSlope, kMaxSlope});
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) prefix_slope_[i] = prefix_slope_[i - 1];
    for (size_t a = 0; a < i; ++a) pair(a, i, &prefix_slope_[i]);
  }
  for (size_t i = n; i-- > 0;) {
    if (i + 1 < n) suffix_slope_[i] = suffix_slope_[i + 1];
    for (size_t b = i + 1; b < n; ++b) pair(i, b, &suffix_slope_[i]);
  }
}

bool ClockFit::Interval(size_t from, size_t to, Range slope, int64_t x,
                        Range* out) const {
  if (from >= to || slope.lo > slope.hi) return false;
  Range r{-std::numeric_limits<double>::infinity(),
          std::numeric_limits<double>::infinity()};
  for (size_t i = from; i < to; ++i) {
    const ClockSample& s = samples_[i];
    const double dx = static_cast<double>(x) - static_cast<double>(s.local_ns);
    const double y = static_cast<double>(s.offset_ns);
    const double h = static_cast<double>(s.half_width_ns);
    // dx >= 0 before x, <= 0 after: the extreme slopes swap ends.
    const double a = slope.lo * dx, b = slope.hi * dx;
    r.lo = std::max(r.lo, y - h + std::min(a, b));
    r.hi = std::min(r.hi, y + h + std::max(a, b));
  }
  if (r.lo > r.hi) return false;
  *out = r;
  return true;
}

bool ClockFit::SideInterval(bool before, int64_t x, Range* out) const {
  const size_t n = samples_.size();
  if (before) {
    const size_t to = static_cast<size_t>(
        std::upper_bound(
            samples_.begin(), samples_.end(), x,
            [](int64_t t, const ClockSample& s) { return t < s.local_ns; }) -
        samples_.begin());
    if (to == 0) return false;
    if (to < n || x == samples_.back().local_ns) {
      return Interval(0, to, prefix_slope_[to - 1], x, out);
    }
  } else {
    const size_t from = static_cast<size_t>(
        std::lower_bound(
            samples_.begin(), samples_.end(), x,
            [](const ClockSample& s, int64_t t) { return s.local_ns < t; }) -
        samples_.begin());
    if (from == n) return false;
    if (from > 0 || x == samples_.front().local_ns) {
      return Interval(from, n, suffix_slope_[from], x, out);
    }
  }
  // Beyond every sample: a step may lie between any two of them, so what
  // the samples after it (before x: every suffix) or before it (after x:
  // every prefix) allow, together.
  bool any = false;
  for (size_t k = 0; k < n; ++k) {
    Range r{0, 0};
    const bool ok = before ? Interval(k, n, suffix_slope_[k], x, &r)
                           : Interval(0, k + 1, prefix_slope_[k], x, &r);
    if (!ok) continue;
    if (!any) *out = r;
    out->lo = std::min(out->lo, r.lo);
    out->hi = std::max(out->hi, r.hi);
    any = true;
  }
  return any;
}

ClockInterval ClockFit::At(int64_t x) const {
  if (samples_.empty()) return {};
  Range before{0, 0}, after{0, 0};
  const bool has_before = SideInterval(true, x, &before);
  const bool has_after = SideInterval(false, x, &after);
  Range r{0, 0};
  // The estimate: the middle of what both sides allow, when they agree
  // (no step between them), else the middle of the hull.
  std::optional<double> middle;
  if (has_before && has_after) {
    r = {std::min(before.lo, after.lo), std::max(before.hi, after.hi)};
    const double lo = std::max(before.lo, after.lo);
    const double hi = std::min(before.hi, after.hi);
    if (lo <= hi) middle = lo + (hi - lo) / 2;
  } else if (has_before) {
    r = before;
  } else if (has_after) {
    r = after;
  } else {
    // The samples contradict each other on both sides (more than one step,
    // or a probe that lied): the nearest ones, with the largest drift.
    auto upper = std::upper_bound(
        samples_.begin(), samples_.end(), x,
        [](int64_t t, const ClockSample& s) { return t < s.local_ns; });
    r = {std::numeric_limits<double>::infinity(),
         -std::numeric_limits<double>::infinity()};
    std::vector<const ClockSample*> nearest;
    if (upper != samples_.end()) nearest.push_back(&*upper);
    if (upper != samples_.begin()) nearest.push_back(&*(upper - 1));
    for (const ClockSample* it : nearest) {
      const double reach =
          kMaxSlope *
          std::abs(static_cast<double>(x) - static_cast<double>(it->local_ns));
      r.lo = std::min(r.lo, static_cast<double>(it->offset_ns) -
                                static_cast<double>(it->half_width_ns) - reach);
      r.hi = std::max(r.hi, static_cast<double>(it->offset_ns) +
                                static_cast<double>(it->half_width_ns) + reach);
    }
  }
  // Outward by a nanosecond for the doubles' rounding; bounded so that
  // absurd samples (from a damaged file) stay defined arithmetic.
  constexpr double kBound = 4.6e18;
  const int64_t lo = Floor(std::clamp(r.lo, -kBound, kBound)) - 1;
  const int64_t hi = Ceil(std::clamp(r.hi, -kBound, kBound)) + 1;
  ClockInterval out;
  out.offset_ns = middle
                      ? std::clamp(static_cast<int64_t>(std::llround(
                                       std::clamp(*middle, -kBound, kBound))),
                                   lo, hi)
                      : static_cast<int64_t>((Wide{lo} + hi) / 2);
  out.uncertainty_ns =
      std::max({hi - out.offset_ns, out.offset_ns - lo, kClockCompareFloorNs});
  return out;
}

double ClockFit::DriftPpm() const {
  if (samples_.size() < 2) return 0;
  const Range& r = prefix_slope_.back();
  if (r.lo > r.hi || (r.lo <= 0 && r.hi >= 0)) return 0;
  // A local clock that gains needs less offset as it goes.
  return -1e6 * (r.lo + r.hi) / 2;
}

}  // namespace podscope::base
