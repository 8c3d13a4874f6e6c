// The clock fit's promise, checked on simulated clocks: whatever the
// offset, drift, delays (symmetric or not), outliers and a step of the
// peer's clock between two probes, the interval stated at any local time
// contains the true offset.
#include "podscope/base/clock_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace podscope::base {
namespace {

// True time tau (ns, as a double); this side's clock reads tau, the
// peer's reads tau + offset + slope * tau, plus `step` from `step_at` on.
struct PeerClock {
  double offset = 0;
  double slope = 0;
  double step = 0;
  double step_at = 1e300;
  double Read(double tau) const {
    return tau + offset + slope * tau + (tau >= step_at ? step : 0);
  }
};

int64_t ReadNs(double v) { return static_cast<int64_t>(std::floor(v)); }

struct Scenario {
  PeerClock peer;
  std::vector<ProbeTimes> probes;
  std::vector<double> send_times;  // tau of each probe's send
  std::vector<double> end_times;   // tau of each probe's end
};

enum class Shape { kSingle, kBurst, kPeriodic, kOutliers, kStep };

Scenario Simulate(std::mt19937_64& rng, Shape shape) {
  std::uniform_real_distribution<double> u(0, 1);
  Scenario s;
  s.peer.offset = (u(rng) - 0.5) * 2e10;         // +-10 s
  s.peer.slope = (u(rng) - 0.5) * 2 * 300e-6;    // +-300 ppm
  const double base = 1'000 + u(rng) * 200'000;  // 1 us .. 200 us
  const double asymmetry = u(rng);               // share of leg 1
  const bool symmetric = u(rng) < 0.3;
  int count = 1;
  double gap = 0;
  switch (shape) {
    case Shape::kSingle:
      break;
    case Shape::kBurst:
      count = 2 + static_cast<int>(u(rng) * 30);
      gap = 1'000 + u(rng) * 20'000;  // microseconds apart
      break;
    case Shape::kPeriodic:
    case Shape::kOutliers:
    case Shape::kStep:
      count = 3 + static_cast<int>(u(rng) * 60);
      gap = 1e6 + u(rng) * 200e6;  // 1 ms .. 200 ms
      break;
  }
  double tau = 1e9 + u(rng) * 1e12;
  for (int i = 0; i < count; ++i) {
    double d1 = symmetric ? base / 2 : base * asymmetry;
    double d2 = symmetric ? base / 2 : base * (1 - asymmetry);
    d1 += 300 + u(rng) * 2'000;
    d2 += 300 + u(rng) * 2'000;
    if (shape == Shape::kOutliers && u(rng) < 0.3) {
      (u(rng) < 0.5 ? d1 : d2) += u(rng) * 10e6;  // delayed by up to 10 ms
    }
    const double hold = u(rng) * 50'000;
    s.send_times.push_back(tau);
    ProbeTimes t;
    t.t1 = ReadNs(tau);
    t.t2 = ReadNs(s.peer.Read(tau + d1));
    t.t3 = ReadNs(s.peer.Read(tau + d1 + hold));
    t.t4 = ReadNs(tau + d1 + hold + d2);
    s.end_times.push_back(tau + d1 + hold + d2);
    s.probes.push_back(t);
    const double next = tau + d1 + hold + d2 + gap * (0.5 + u(rng));
    if (shape == Shape::kStep && i == count / 2) {
      // Between this exchange and the next.
      s.peer.step_at = (s.end_times.back() + next) / 2;
      const double size = 10'000 + u(rng) * 100e6;
      s.peer.step = u(rng) < 0.5 ? size : -size;
    }
    tau = next;
  }
  return s;
}

// Checks the fit of `s` from both sides at many local times; returns the
// number of intervals checked.
int CheckScenario(std::mt19937_64& rng, const Scenario& s, const char* what) {
  std::vector<ClockSample> this_side, peer_side;
  for (const ProbeTimes& t : s.probes) {
    if (CheckProbe(t) != ProbeFault::kNone) continue;
    this_side.push_back(SampleThisSideLocal(t));
    peer_side.push_back(SamplePeerLocal(t));
  }
  EXPECT_FALSE(this_side.empty()) << what;
  if (this_side.empty()) return 0;
  const ClockFit mine(this_side);
  const ClockFit theirs(peer_side);
  std::uniform_real_distribution<double> u(0, 1);
  const double first = s.send_times.front() - 2e9;
  const double last = s.end_times.back() + 2e9;
  int checked = 0;
  for (int k = 0; k < 40; ++k) {
    // Near the probes mostly, and seconds before and after.
    double tau = first + u(rng) * (last - first);
    if (k % 2 == 0) {
      const size_t i = static_cast<size_t>(u(rng) * s.send_times.size());
      tau = s.send_times[std::min(i, s.send_times.size() - 1)] +
            (u(rng) - 0.5) * 4e6;
    }
    // This side's clock is the local one: reference = the peer.
    const int64_t x = ReadNs(tau);
    const double truth = s.peer.Read(tau) - tau;
    const ClockInterval a = mine.At(x);
    EXPECT_LE(std::abs(static_cast<double>(a.offset_ns) - truth),
              static_cast<double>(a.uncertainty_ns) + 1)
        << what << " this side, at " << x << ": " << a.offset_ns << " +- "
        << a.uncertainty_ns << ", truth " << truth;
    EXPECT_GE(a.uncertainty_ns, kClockCompareFloorNs);
    // The peer's clock is the local one: reference = this side. A local
    // clock that steps back names two instants by one time (CLOCK_MONOTONIC
    // never does); a step forward is checked.
    checked += 1;
    if (s.peer.step < 0) continue;
    const int64_t y = ReadNs(s.peer.Read(tau));
    const double their_truth = tau - s.peer.Read(tau);
    const ClockInterval b = theirs.At(y);
    EXPECT_LE(std::abs(static_cast<double>(b.offset_ns) - their_truth),
              static_cast<double>(b.uncertainty_ns) + 1)
        << what << " peer side, at " << y << ": " << b.offset_ns << " +- "
        << b.uncertainty_ns << ", truth " << their_truth;
    checked += 1;
  }
  // At a probe, the fit stays within that probe's own interval: its
  // estimate inside it, and so its uncertainty at most the interval's width.
  for (const ClockSample& p : mine.samples()) {
    const ClockInterval at = mine.At(p.local_ns);
    EXPECT_LE(std::abs(at.offset_ns - p.offset_ns), p.half_width_ns + 2)
        << what;
    EXPECT_LE(at.uncertainty_ns,
              std::max(2 * p.half_width_ns + 2, kClockCompareFloorNs))
        << what;
  }
  return checked;
}

TEST(ClockFit, StatedIntervalAlwaysContainsTheTruth) {
  std::mt19937_64 rng(20261126);
  const std::pair<Shape, const char*> shapes[] = {
      {Shape::kSingle, "a single probe"},
      {Shape::kBurst, "a burst"},
      {Shape::kPeriodic, "periodic probes"},
      {Shape::kOutliers, "delayed outliers"},
      {Shape::kStep, "a step in the middle"}};
  int checked = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    for (const auto& [shape, what] : shapes) {
      checked += CheckScenario(rng, Simulate(rng, shape), what);
      if (::testing::Test::HasFailure()) return;
    }
  }
  EXPECT_GT(checked, 100'000);
}

TEST(ClockFit, ResolvesDriftFromSpreadProbes) {
  // 50 ppm over ten seconds of probes with 10 us round trips.
  std::vector<ClockSample> samples;
  for (int i = 0; i <= 10; ++i) {
    const int64_t x = int64_t{i} * 1'000'000'000;
    samples.push_back({x, 7'000 - 50 * (x / 1'000'000), 5'010, 10'000});
  }
  const ClockFit fit(samples);
  EXPECT_NEAR(fit.DriftPpm(), 50, 2);
  // Halfway between probes the interval is about as wide as a probe's.
  EXPECT_LE(fit.At(4'500'000'000).uncertainty_ns, 2 * 5'010);
}

TEST(ClockFit, DecimatesToTheNarrowestSamples) {
  std::vector<ClockSample> samples;
  for (int i = 0; i < 5'000; ++i) {
    samples.push_back(
        {int64_t{i} * 1'000'000, 0, i == 2'500 ? 1'000 : 50'000, 100'000});
  }
  const ClockFit fit(samples, 64);
  EXPECT_LE(fit.samples().size(), 64u);
  EXPECT_LE(fit.At(2'500'000'000).uncertainty_ns, 1'002);
}

TEST(CheckProbe, DiscardsTimestampsThatCannotBeTrusted) {
  // A receive time from another clock than the send time: before it.
  EXPECT_EQ(CheckProbe({1'000'000, 5, 10, 999'000}), ProbeFault::kOutOfOrder);
  EXPECT_EQ(CheckProbe({0, 10, 5, 100'000}), ProbeFault::kOutOfOrder);
  // The peer held the probe longer than the whole exchange took.
  EXPECT_EQ(CheckProbe({0, 1'000, 60'000, 50'000}),
            ProbeFault::kNegativeRoundTrip);
  // Two network paths in 200 ns.
  EXPECT_EQ(CheckProbe({0, 1'000, 50'000, 49'200}),
            ProbeFault::kImplausiblyFast);
  EXPECT_EQ(CheckProbe({INT64_MIN, 0, 1, INT64_MAX}), ProbeFault::kOutOfRange);
  EXPECT_EQ(CheckProbe({0, INT64_MAX - 10, INT64_MAX, 20'000}),
            ProbeFault::kOutOfRange);
  EXPECT_EQ(CheckProbe({0, 1'000, 6'000, 15'000}), ProbeFault::kNone);
}

TEST(ClockSample, HalfTheRoundTripPlusTheMargin) {
  // Peer 1 ms ahead, 3 us out and 7 us back, held 5 us.
  const ProbeTimes t{0, 1'003'000, 1'008'000, 15'000};
  const ClockSample mine = SampleThisSideLocal(t);
  EXPECT_EQ(mine.round_trip_ns, 10'000);
  EXPECT_EQ(mine.offset_ns, 998'000);  // 2 us off: half the asymmetry
  EXPECT_GE(mine.half_width_ns, 5'000);
  EXPECT_LE(mine.half_width_ns, 5'000 + 1 + kClockReadGranularityNs + 15);
  const ClockSample theirs = SamplePeerLocal(t);
  EXPECT_EQ(theirs.offset_ns, -998'000);
  EXPECT_EQ(theirs.local_ns, 1'005'500);
}

}  // namespace
}  // namespace podscope::base
