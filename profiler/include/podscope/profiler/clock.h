// The profiler's clock: CPU timestamp counter ticks on the hot path,
// converted to CLOCK_MONOTONIC nanoseconds off it. Where the TSC is not
// invariant (or not x86), ticks are CLOCK_MONOTONIC nanoseconds themselves.
#ifndef PODSCOPE_PROFILER_CLOCK_H_
#define PODSCOPE_PROFILER_CLOCK_H_

#include <time.h>

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace podscope::profiler {

namespace internal {
// True when ticks come from the TSC; set once by the clock's calibration.
extern bool g_use_tsc;
}  // namespace internal

// CLOCK_MONOTONIC in nanoseconds.
inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// A raw timestamp for the hot path.
inline uint64_t Ticks() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_expect(internal::g_use_tsc, true)) return __rdtsc();
#endif
  return static_cast<uint64_t>(MonotonicNs());
}

// Converts ticks to monotonic nanoseconds: a linear map fitted by
// calibration against CLOCK_MONOTONIC.
struct TickCalibration {
  bool tsc = false;
  uint64_t tick_base = 0;
  int64_t ns_base = 0;
  double ns_per_tick = 1.0;
  int64_t ToNs(uint64_t ticks) const {
    const double delta =
        static_cast<double>(static_cast<int64_t>(ticks - tick_base));
    return ns_base + static_cast<int64_t>(delta * ns_per_tick);
  }
};

// A linear change of the profiler's clock, for tests only: set from
// PODSCOPE_TEST_CLOCK_OFFSET_NS (nanoseconds added) and
// PODSCOPE_TEST_CLOCK_DRIFT_PPM (parts per million gained, counted from the
// moment the process first read its profiler clock), so that tests can give
// processes on one machine clocks as far apart as separate hosts' clocks.
// Every timestamp a session writes and every clock probe the profiler
// server answers goes through it. Never set these in production.
struct ClockSkew {
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t anchor_ns = 0;  // monotonic time at which drift starts
  bool active() const { return offset_ns != 0 || drift_ppm != 0; }
  int64_t Apply(int64_t monotonic_ns) const {
    if (!active()) return monotonic_ns;
    const double since = static_cast<double>(monotonic_ns - anchor_ns);
    return monotonic_ns + offset_ns +
           static_cast<int64_t>(since * drift_ppm * 1e-6);
  }
};

// The skew from the environment, read once per process.
const ClockSkew& TestClockSkew();

// The profiler's clock: CLOCK_MONOTONIC with the test skew applied. Trace
// timestamps and clock probes are on this clock.
inline int64_t ProfilerNowNs() { return TestClockSkew().Apply(MonotonicNs()); }

// The clock a session stamps its events with: CLOCK_MONOTONIC changed by
// a linear skew (none on a real process). ProcessClock() is the process's
// own, with the test skew from the environment; a test hands a session
// another one (TraceOptions::clock) to skew that session alone, without
// environment variables.
class ProfilerClock {
 public:
  virtual ~ProfilerClock() = default;
  // The skew applied to CLOCK_MONOTONIC; must not change while a session
  // uses the clock.
  virtual ClockSkew skew() const = 0;
  int64_t NowNs() const { return skew().Apply(MonotonicNs()); }
};

// A clock with a fixed skew, for tests.
class SkewedClock final : public ProfilerClock {
 public:
  explicit SkewedClock(const ClockSkew& skew) : skew_(skew) {}
  ClockSkew skew() const override { return skew_; }

 private:
  const ClockSkew skew_;
};

// The process's clock: TestClockSkew() applied.
const ProfilerClock& ProcessClock();

// `c` composed with `skew`: ticks map directly to skewed nanoseconds.
inline TickCalibration Skewed(const TickCalibration& c, const ClockSkew& skew) {
  if (!skew.active()) return c;
  TickCalibration s = c;
  s.ns_base = skew.Apply(c.ns_base);
  s.ns_per_tick = c.ns_per_tick * (1.0 + skew.drift_ppm * 1e-6);
  return s;
}

// Whether this CPU's TSC runs at a constant rate across P/C-states
// (CPUID 0x80000007 EDX bit 8).
bool CpuHasInvariantTsc();

// Measures the tick rate against CLOCK_MONOTONIC over `sample_ms`
// (more time: more precision). Without an invariant TSC the map is the
// identity.
TickCalibration CalibrateTicks(int sample_ms = 20);

// Refines `start` with a second measurement taken now, so that the map
// is exact at both ends of a capture.
TickCalibration RefineCalibration(const TickCalibration& start);

// This process's map, calibrated once (the first call sleeps about 10 ms)
// and refined by every later call over the whole time since: for turning
// an instant a little ahead into ticks without calibrating anew (and
// sleeping) each time.
TickCalibration ProcessTickCalibration();

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_CLOCK_H_
