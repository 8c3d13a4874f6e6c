#include "time_axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace podscope::viewer::app {

void TimeAxis::SetBounds(int64_t first_ns, int64_t last_ns) {
  first_ = first_ns;
  last_ = std::max(last_ns, first_ns + 1);
  Fit();
}

void TimeAxis::SetWidth(int pixels) { width_ = std::max(pixels, 1); }

int64_t TimeAxis::MinT0() const {
  return first_ - std::max<int64_t>((last_ - first_) / 20, kMinSpanNs);
}

int64_t TimeAxis::MaxT1() const {
  return last_ + std::max<int64_t>((last_ - first_) / 20, kMinSpanNs);
}

void TimeAxis::SetWindow(int64_t t0, int64_t t1) {
  const int64_t lo = MinT0(), hi = MaxT1();
  int64_t span = std::clamp<int64_t>(t1 - t0, kMinSpanNs, hi - lo);
  if (t1 <= t0) span = kMinSpanNs;
  t0 = std::clamp<int64_t>(t0, lo, hi - span);
  t0_ = t0;
  t1_ = t0 + span;
}

void TimeAxis::Fit() {
  t0_ = MinT0();
  t1_ = MaxT1();
}

double TimeAxis::TimeToX(int64_t t) const {
  return static_cast<double>(t - t0_) * width_ / static_cast<double>(span());
}

int64_t TimeAxis::XToTime(double x) const {
  return t0_ + static_cast<int64_t>(
                   std::floor(x * static_cast<double>(span()) / width_));
}

double TimeAxis::NsPerPixel() const {
  return static_cast<double>(span()) / width_;
}

void TimeAxis::ZoomAround(double x, double factor) {
  if (factor <= 0) return;
  const double anchor =
      static_cast<double>(t0_) + x * static_cast<double>(span()) / width_;
  const double new_span = static_cast<double>(span()) / factor;
  const double new_t0 = anchor - x * new_span / width_;
  const int64_t span_ns = std::max<int64_t>(
      kMinSpanNs, static_cast<int64_t>(std::llround(new_span)));
  const int64_t t0 = static_cast<int64_t>(std::llround(new_t0));
  // Clamp the span first so a zoom out at a margin keeps its anchor side.
  const int64_t max_span = MaxT1() - MinT0();
  if (span_ns >= max_span) {
    Fit();
    return;
  }
  SetWindow(t0, t0 + span_ns);
}

void TimeAxis::PanPixels(double dx) {
  const int64_t shift = static_cast<int64_t>(std::llround(dx * NsPerPixel()));
  const int64_t s = span();
  SetWindow(t0_ - shift, t0_ - shift + s);
}

void TimeAxis::CenterOn(int64_t t) {
  const int64_t s = span();
  SetWindow(t - s / 2, t - s / 2 + s);
}

namespace {

struct Unit {
  int64_t ns;
  const char* name;
};
constexpr Unit kUnits[] = {
    {1, "ns"}, {1000, "µs"}, {1000000, "ms"}, {1000000000, "s"}};

}  // namespace

Ruler ChooseRuler(const TimeAxis& axis, int64_t origin_ns,
                  double min_spacing_px) {
  Ruler r;
  const double ns_per_px = axis.NsPerPixel();
  const double want = std::max(1.0, ns_per_px * min_spacing_px);
  int64_t step = 1;
  for (int64_t decade = 1;; decade *= 10) {
    bool found = false;
    for (int64_t m : {1, 2, 5}) {
      if (static_cast<double>(decade * m) >= want) {
        step = decade * m;
        found = true;
        break;
      }
    }
    if (found || decade > INT64_MAX / 100) break;
  }
  r.step_ns = step;
  // The unit of the largest time shown, so every label uses the same one.
  const int64_t magnitude = std::max(std::llabs(axis.t0() - origin_ns),
                                     std::llabs(axis.t1() - origin_ns));
  const Unit* unit = &kUnits[0];
  for (const Unit& u : kUnits) {
    if (magnitude >= u.ns) unit = &u;
  }
  r.unit = unit->name;
  r.unit_ns = unit->ns;
  int decimals = 0;
  for (int64_t s = step; s < unit->ns && decimals < 9; s *= 10) ++decimals;
  // A step of 2 or 5 times a power of ten below the unit needs no more
  // digits than that power, which the loop above counts.
  r.decimals = decimals;

  const int64_t rel0 = axis.t0() - origin_ns;
  int64_t first = rel0 / step * step;
  if (first < rel0) first += step;
  for (int64_t rel = first; rel + origin_ns <= axis.t1(); rel += step) {
    RulerTick tick;
    tick.t = rel + origin_ns;
    tick.x = axis.TimeToX(tick.t);
    tick.label = FormatRulerTime(r, rel);
    r.ticks.push_back(std::move(tick));
    if (r.ticks.size() > 10000) break;
  }
  return r;
}

std::string FormatRulerTime(const Ruler& ruler, int64_t since_origin_ns) {
  char buf[64];
  const bool negative = since_origin_ns < 0;
  const uint64_t v = negative ? 0 - static_cast<uint64_t>(since_origin_ns)
                              : static_cast<uint64_t>(since_origin_ns);
  const uint64_t unit = static_cast<uint64_t>(ruler.unit_ns);
  const uint64_t whole = v / unit;
  uint64_t frac = v % unit;
  if (ruler.decimals == 0) {
    std::snprintf(buf, sizeof buf, "%s%llu %s", negative ? "-" : "",
                  static_cast<unsigned long long>(whole), ruler.unit.c_str());
    return buf;
  }
  // frac has log10(unit) digits; keep the first `decimals`.
  int digits = 0;
  for (uint64_t u = unit; u > 1; u /= 10) ++digits;
  for (int i = ruler.decimals; i < digits; ++i) frac /= 10;
  std::snprintf(buf, sizeof buf, "%s%llu.%0*llu %s", negative ? "-" : "",
                static_cast<unsigned long long>(whole), ruler.decimals,
                static_cast<unsigned long long>(frac), ruler.unit.c_str());
  return buf;
}

}  // namespace podscope::viewer::app
