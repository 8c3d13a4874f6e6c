// The lean clock-probe path: the public server and client on loopback
// (answers, offsets on one clock, wrong keys), and the line the capture
// client fits to every probe of a capture (offset and drift recovered from
// noisy probes with delayed outliers, and an uncertainty that holds).
#include "podscope/profiler/clock_probe.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "podscope/base/clock_fit.h"
#include "podscope/profiler/capture.h"
#include "src/capture/clock_probes.h"
#include "src/clock_probe_wire.h"

namespace podscope::profiler {
namespace {

TEST(ClockProbe, AnswersOnLoopbackWithTheSameClock) {
  auto server = ClockProbeServer::Start("127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->key_hex().size(), 32u);
  auto client = ClockProbeClient::Connect("127.0.0.1", (*server)->port(),
                                          (*server)->key_hex());
  ASSERT_TRUE(client.ok()) << client.status();
  const std::optional<PeerClockProbe> p = (*client)->BestOf(16, 1000);
  ASSERT_TRUE(p.has_value());
  EXPECT_LE(p->t1, p->t2);
  EXPECT_LE(p->t2, p->t3);
  EXPECT_LE(p->t3, p->t4);
  EXPECT_GE(p->round_trip_ns(), 0);
  // One process, one clock: the offset is zero within half the round trip.
  EXPECT_LE(std::abs(p->offset_ns()), p->round_trip_ns() / 2 + 1)
      << "round trip " << p->round_trip_ns();
}

TEST(ClockProbe, AnotherKeyIsNotAnsweredAndABadKeyIsRefused) {
  auto server = ClockProbeServer::Start("127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  std::string other = (*server)->key_hex();
  other[0] = other[0] == '0' ? '1' : '0';
  auto stranger =
      ClockProbeClient::Connect("127.0.0.1", (*server)->port(), other);
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_FALSE((*stranger)->ProbeOnce(200).has_value());

  auto bad = ClockProbeClient::Connect("127.0.0.1", (*server)->port(), "xyz");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("hex"), std::string::npos);
  auto no_port =
      ClockProbeClient::Connect("127.0.0.1", 0, (*server)->key_hex());
  EXPECT_FALSE(no_port.ok());
}

// On loopback with every core busy, every probe kept is honest: one
// process, one clock, so the true offset is 0 and must lie within the
// probe's stated bound; probes with untrustworthy timestamps are the only
// ones left out.
TEST(ClockProbe, UnderLoadEveryTrustedProbeHoldsTheTruth) {
  auto server = ClockProbeServer::Start("127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = ClockProbeClient::Connect("127.0.0.1", (*server)->port(),
                                          (*server)->key_hex());
  ASSERT_TRUE(client.ok()) << client.status();
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency());
       ++i) {
    load.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  int trusted = 0;
  for (int i = 0; i < 500; ++i) {
    const std::optional<PeerClockProbe> p = (*client)->ProbeOnce(1000);
    if (!p) continue;
    const base::ProbeTimes t{p->t1, p->t2, p->t3, p->t4};
    if (base::CheckProbe(t) != base::ProbeFault::kNone) continue;
    ++trusted;
    const base::ClockSample s = base::SampleThisSideLocal(t);
    EXPECT_LE(std::abs(s.offset_ns), s.half_width_ns)
        << "probe " << i << ": round trip " << s.round_trip_ns;
  }
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_GE(trusted, 400);
}

// Simulated clocks for the kernel receive time's conversion: every read
// advances time by `gap` (a thread descheduled between its reads).
struct FakeClocks {
  static constexpr int64_t kRealMinusMono = 1'700'000'000'000'000'000;
  static inline int64_t now = 0;
  static inline int64_t gap = 0;
  static int64_t Monotonic() {
    const int64_t v = now;
    now += gap;
    return v;
  }
  static int64_t Realtime() {
    const int64_t v = now + kRealMinusMono;
    now += gap;
    return v;
  }
};

// The kernel stamps a datagram on CLOCK_REALTIME; taken over to the
// monotonic clock, the time must never come out before the datagram
// arrived, however long the thread was away between its clock reads (a
// receive time too early shrinks the round trip and skews the offset: a
// probe 16 us off once stated an uncertainty of 1 ns).
TEST(KernelReceiveTime, NeverBeforeTheDatagramArrived) {
  for (const int64_t gap :
       {int64_t{0}, int64_t{30}, int64_t{32'000}, int64_t{2'000'000}}) {
    const int64_t arrived = 5'000'000'000;
    FakeClocks::now = arrived + 7'000;  // read 7 us after it arrived
    FakeClocks::gap = gap;
    const int64_t woke = FakeClocks::now;
    FakeClocks::now += gap;
    internal::ClockReads clocks;
    clocks.monotonic = &FakeClocks::Monotonic;
    clocks.realtime = &FakeClocks::Realtime;
    const int64_t got = internal::KernelReceiveToMonotonic(
        arrived + FakeClocks::kRealMinusMono, woke, clocks);
    EXPECT_GE(got, arrived) << "descheduled for " << gap << " ns";
    EXPECT_LE(got, woke) << "descheduled for " << gap << " ns";
    // Close to the arrival when the reads were not interrupted.
    if (gap <= 30) {
      EXPECT_LE(got - arrived, 200) << gap;
    }
  }
}

// Probes of a worker whose clock is 5 ms behind and gains 120 ppm: most
// take 40-60 us, one in five is delayed by the scheduler on one leg (a
// long round trip with a lopsided offset).
TEST(FitClock, RecoversOffsetAndDriftFromNoisyProbes) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> rtt(40'000, 60'000);
  std::uniform_int_distribution<int64_t> delay(300'000, 2'000'000);
  constexpr int64_t kOffset = 5'000'000;
  constexpr double kSlope = -120e-6;  // offset shrinks as the worker gains
  auto true_offset = [&](int64_t local) {
    return kOffset + static_cast<int64_t>(std::llround(
                         kSlope * static_cast<double>(local - 1'000'000'000)));
  };
  std::vector<ClockEstimate> probes;
  for (int i = 0; i < 40; ++i) {
    const int64_t local = 1'000'000'000 + int64_t{i} * 100'000'000;
    ClockEstimate e;
    e.local_ns = local;
    e.round_trip_ns = rtt(rng);
    // The measured offset is off by at most half the round trip.
    int64_t error =
        static_cast<int64_t>(rng() % e.round_trip_ns) - e.round_trip_ns / 2;
    if (i % 5 == 3) {
      const int64_t d = delay(rng);
      e.round_trip_ns += d;
      error += d / 2;
    }
    e.offset_ns = true_offset(local) + error;
    e.uncertainty_ns = e.round_trip_ns / 2;
    probes.push_back(e);
  }
  const std::vector<ClockEstimate> fit = internal::FitClock(probes);
  ASSERT_GE(fit.size(), 2u);
  ASSERT_LE(fit.size(), 64u);
  EXPECT_EQ(fit.front().local_ns, probes.front().local_ns);
  EXPECT_EQ(fit.back().local_ns, probes.back().local_ns);
  for (const ClockEstimate& e : fit) {
    const int64_t error = std::abs(e.offset_ns - true_offset(e.local_ns));
    EXPECT_LE(error, 30'000) << "at " << e.local_ns;
    // The stated uncertainty holds and is not inflated by the outliers.
    EXPECT_LE(error, e.uncertainty_ns);
    EXPECT_LT(e.uncertainty_ns, 100'000);
  }
  const double slope =
      static_cast<double>(fit.back().offset_ns - fit.front().offset_ns) /
      static_cast<double>(fit.back().local_ns - fit.front().local_ns);
  EXPECT_NEAR(slope * 1e6, kSlope * 1e6, 15);

  // One probe is its own estimate.
  const std::vector<ClockEstimate> one = internal::FitClock({probes.front()});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_LE(std::abs(one[0].offset_ns - probes.front().offset_ns), 1);
  EXPECT_LE(std::abs(one[0].uncertainty_ns - probes.front().uncertainty_ns), 2);
}

}  // namespace
}  // namespace podscope::profiler
