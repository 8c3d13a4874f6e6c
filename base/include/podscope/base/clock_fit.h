// The one clock fit of the project: from NTP-style probes (four
// timestamps, two on each clock) to an offset between two clocks with an
// uncertainty that is a bound, not a guess. The capture client, a job's
// ranks and the trace reader all go through it (docs/profiler-service.md,
// "How honest the clock is").
//
// The rule, in three steps:
// - A probe is trusted only if its timestamps are in causal order on each
//   clock (t1 <= t4, t2 <= t3) and its round trip is plausible; a probe
//   that fails is discarded and counted by the caller (ProbeFault).
// - One probe says: at its midpoint the offset is within half its round
//   trip (+ the rounding of the halves, the read granularity, and what the
//   largest drift can add during the exchange) of its estimate. This holds
//   whatever the path's asymmetry, as long as each receive time is taken
//   no earlier than the packet really arrived and each send time no later
//   than it really left.
// - Between and beyond probes the offset moves with the drift. The drift
//   is bounded by the pairs of probes themselves (a line through two
//   intervals), or failing that by kMaxClockDriftPpm. At a local time x
//   the fit intersects what the probes before x allow and, separately, what
//   the probes after x allow, and states the hull of the two: so a clock
//   step anywhere between two probes still leaves the truth inside.
// Every stated uncertainty is at least kClockCompareFloorNs.
#ifndef PODSCOPE_BASE_CLOCK_FIT_H_
#define PODSCOPE_BASE_CLOCK_FIT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace podscope::base {

// How well two clocks can be compared at all, whatever the probes say: the
// kernel stamps a datagram somewhere on its receive path that user space
// cannot see, and each side reads its clock through a conversion. No stated
// uncertainty is smaller.
inline constexpr int64_t kClockCompareFloorNs = 1'000;
// What reading the clocks adds to one probe: clock_gettime's nanosecond
// resolution on each of the four reads.
inline constexpr int64_t kClockReadGranularityNs = 4;
// The largest rate difference assumed between two clocks when the probes
// do not bound it: each clock off by at most 500 ppm (the kernel's limit
// on frequency correction).
inline constexpr double kMaxClockDriftPpm = 1000;
// No datagram crosses two kernel network paths and back in less: a round
// trip below this means the timestamps were not taken where they claim.
inline constexpr int64_t kMinPlausibleRoundTripNs = 500;
// Longer exchanges say nothing useful and are treated as broken.
inline constexpr int64_t kMaxPlausibleRoundTripNs = 10'000'000'000;

// One exchange: this side sends at t1 and receives the answer at t4 (on its
// clock); the peer receives at t2 and answers at t3 (on the peer's clock).
struct ProbeTimes {
  int64_t t1 = 0, t2 = 0, t3 = 0, t4 = 0;
};

enum class ProbeFault {
  kNone,
  kOutOfOrder,         // t4 < t1 or t3 < t2: a clock went back or mixed
  kNegativeRoundTrip,  // the peer's hold exceeds the whole exchange
  kImplausiblyFast,    // a round trip below kMinPlausibleRoundTripNs
  kOutOfRange,         // a round trip, hold or offset no clock can have
};
const char* ProbeFaultName(ProbeFault fault);
ProbeFault CheckProbe(const ProbeTimes& t);

// reference = local + offset_ns at local time local_ns, the truth within
// half_width_ns of it.
struct ClockSample {
  int64_t local_ns = 0;
  int64_t offset_ns = 0;
  int64_t half_width_ns = 0;
  int64_t round_trip_ns = 0;
};

// For a trusted probe (CheckProbe() == kNone). ThisSideLocal: this side's
// clock is the local one and the peer's the reference (a rank measuring
// rank 0). PeerLocal: the peer's clock is the local one and this side's
// the reference (a capture client measuring a worker).
ClockSample SampleThisSideLocal(const ProbeTimes& t);
ClockSample SamplePeerLocal(const ProbeTimes& t);

// An offset and the half-width of an interval that contains the truth.
struct ClockInterval {
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
};

class ClockFit {
 public:
  // At most `max_samples` are kept (the narrowest of each stretch of
  // time), which keeps construction quadratic in a bounded number.
  explicit ClockFit(std::vector<ClockSample> samples, size_t max_samples = 256);

  bool empty() const { return samples_.empty(); }
  // The samples kept, by local time.
  const std::vector<ClockSample>& samples() const { return samples_; }
  // The interval at `local_ns` (see the file comment); with no sample,
  // offset 0 and no uncertainty.
  ClockInterval At(int64_t local_ns) const;
  // The drift the samples resolve, in ppm (positive: the local clock gains
  // on the reference); 0 when they do not bound it away from zero.
  double DriftPpm() const;

 private:
  struct Range {
    double lo, hi;
  };
  // What samples [from, to) allow at `x` with slopes `slope`; false when
  // they contradict each other.
  bool Interval(size_t from, size_t to, Range slope, int64_t x,
                Range* out) const;
  // What the samples at or before `x` (`before`), or at or after it, allow
  // at `x`; false when there are none or they contradict each other.
  bool SideInterval(bool before, int64_t x, Range* out) const;

  std::vector<ClockSample> samples_;
  std::vector<Range> prefix_slope_;  // slopes allowed by samples [0, i]
  std::vector<Range> suffix_slope_;  // slopes allowed by samples [i, n)
};

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_CLOCK_FIT_H_
