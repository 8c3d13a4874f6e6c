// The horizontal view-model of the timeline: which window of time is shown
// across how many pixels, how zoom and pan move it, and which ruler ticks
// label it. Qt-free so it is tested without a window.
#ifndef PODSCOPE_VIEWER_APP_TIME_AXIS_H_
#define PODSCOPE_VIEWER_APP_TIME_AXIS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace podscope::viewer::app {

class TimeAxis {
 public:
  // The narrowest window a zoom reaches.
  static constexpr int64_t kMinSpanNs = 20;

  // The extent of the trace; the window may go a little past it (a margin
  // of 5% of the extent) so the first and last events are not glued to the
  // edges. Resets the window to the whole trace.
  void SetBounds(int64_t first_ns, int64_t last_ns);
  void SetWidth(int pixels);

  int64_t first_ns() const { return first_; }
  int64_t last_ns() const { return last_; }
  int64_t t0() const { return t0_; }
  int64_t t1() const { return t1_; }
  int64_t span() const { return t1_ - t0_; }
  int width() const { return width_; }

  // Sets the window, keeping its span within [kMinSpanNs, the whole trace
  // with margins] and its position within the margins.
  void SetWindow(int64_t t0, int64_t t1);
  // The whole trace with its margins.
  void Fit();

  double TimeToX(int64_t t) const;
  // The time at x, rounded down to a nanosecond.
  int64_t XToTime(double x) const;
  double NsPerPixel() const;

  // factor > 1 zooms in, < 1 out; the time under `x` stays under `x`.
  void ZoomAround(double x, double factor);
  // Moves the content by dx pixels (positive: content moves right, i.e.
  // the window moves to earlier times).
  void PanPixels(double dx);
  // Shows `t` at the centre, keeping the span.
  void CenterOn(int64_t t);

 private:
  int64_t MinT0() const;
  int64_t MaxT1() const;
  int64_t first_ = 0;
  int64_t last_ = 1;
  int64_t t0_ = 0;
  int64_t t1_ = 1;
  int width_ = 1;
};

// The ticks of the time ruler: a step of 1, 2 or 5 times a power of ten
// nanoseconds, the smallest whose ticks are at least `min_spacing_px`
// apart. Labels are times since `origin_ns` (the start of the trace) in
// the unit of the window's magnitude with as many decimals as the step
// needs: "1.25 ms", "12.0000001 s".
struct RulerTick {
  int64_t t = 0;  // absolute
  double x = 0;
  std::string label;
};
struct Ruler {
  int64_t step_ns = 1;
  std::string unit;  // "ns", "µs", "ms" or "s"
  int64_t unit_ns = 1;
  int decimals = 0;
  std::vector<RulerTick> ticks;
};
Ruler ChooseRuler(const TimeAxis& axis, int64_t origin_ns,
                  double min_spacing_px);
// A time since the origin in the ruler's unit and precision.
std::string FormatRulerTime(const Ruler& ruler, int64_t since_origin_ns);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TIME_AXIS_H_
