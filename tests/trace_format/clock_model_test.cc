// ClockModel: mapping local monotonic time to the capture's reference clock
// (with drift) and to wall-clock time.
#include "podscope/trace_format/clock_model.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "podscope/trace_format/writer.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

proto::ClockRecord Offsets(
    std::initializer_list<std::tuple<int64_t, int64_t, int64_t>> points) {
  proto::ClockRecord record;
  for (const auto& [local, offset, uncertainty] : points) {
    proto::ClockOffset* o = record.add_offsets();
    o->set_local_monotonic_ns(local);
    o->set_offset_ns(offset);
    o->set_uncertainty_ns(uncertainty);
  }
  return record;
}

TEST(ClockModel, WithoutOffsetsLocalTimeIsReferenceTime) {
  ClockModel model;
  EXPECT_FALSE(model.has_reference());
  EXPECT_EQ(model.ToReference(123'456), 123'456);
  EXPECT_EQ(model.UncertaintyAt(5), 0);
  EXPECT_EQ(model.DriftPpm(), 0);
  EXPECT_FALSE(model.ToRealtime(5).has_value());
  EXPECT_FALSE(ClockModel(proto::ClockRecord()).has_reference());
}

TEST(ClockModel, SingleOffsetShiftsEveryTime) {
  ClockModel model(Offsets({{1'000, -250, 30}}));
  EXPECT_TRUE(model.has_reference());
  EXPECT_EQ(model.ToReference(1'000), 750);
  EXPECT_EQ(model.ToReference(0), -250);
  EXPECT_EQ(model.ToReference(1'000'000'000'000), 999'999'999'750);
  // A 30 ns measurement is stated at the floor of how well two clocks
  // compare; away from it, by what the largest drift can add.
  EXPECT_EQ(model.UncertaintyAt(1'000), base::kClockCompareFloorNs);
  EXPECT_GE(model.UncertaintyAt(1'000'001'000), 1'000'000);
  EXPECT_EQ(model.DriftPpm(), 0);
}

TEST(ClockModel, InterpolatesDriftBetweenMeasurements) {
  // The local clock runs 1 ppm slow: 1000 ns more offset per second.
  ClockModel model(
      Offsets({{1'000'000'000, 500, 10}, {3'000'000'000, 2'500, 40}}));
  EXPECT_EQ(model.ToReference(1'000'000'000), 1'000'000'500);
  EXPECT_EQ(model.ToReference(3'000'000'000), 3'000'002'500);
  EXPECT_EQ(model.ToReference(2'000'000'000), 2'000'001'500);
  EXPECT_EQ(model.ToReference(1'500'000'000), 1'500'001'000);
  EXPECT_DOUBLE_EQ(model.DriftPpm(), -1.0);
  // At a measurement, the floor of how well two clocks compare.
  EXPECT_EQ(model.UncertaintyAt(1'000'000'000), base::kClockCompareFloorNs);
  EXPECT_EQ(model.UncertaintyAt(3'000'000'000), base::kClockCompareFloorNs);
  // Between two measurements a clock step could hide: what either side
  // allows with the largest drift (1000 ppm), so the truth stays inside.
  EXPECT_GE(model.UncertaintyAt(1'100'000'000), 100'000);
}

TEST(ClockModel, UncertaintyBetweenManyMeasurementsFollowsTheirDrift) {
  // 20 ppm over ten measurements 100 ms apart, each within 5 us.
  proto::ClockRecord record;
  for (int i = 0; i < 10; ++i) {
    proto::ClockOffset* o = record.add_offsets();
    o->set_local_monotonic_ns(int64_t{i} * 100'000'000);
    o->set_offset_ns(7'000 + 2'000 * int64_t{i});
    o->set_uncertainty_ns(5'000);
  }
  const ClockModel model(record);
  // Halfway between two measurements in the middle: about one
  // measurement's uncertainty, not the drift bound's 50 us.
  EXPECT_LE(model.UncertaintyAt(450'000'000), 12'000);
  EXPECT_GE(model.UncertaintyAt(450'000'000), 5'000);
}

TEST(ClockModel, ExtrapolatesWithTheNearestSlope) {
  ClockModel model(
      Offsets({{1'000'000'000, 500, 0}, {3'000'000'000, 2'500, 0}}));
  EXPECT_EQ(model.ToReference(5'000'000'000), 5'000'004'500);
  EXPECT_EQ(model.ToReference(0), -500);
  // Three measurements with different slopes: each side uses its own pair.
  ClockModel bent(Offsets({{0, 0, 0}, {1'000, 100, 0}, {2'000, 100, 0}}));
  EXPECT_EQ(bent.ToReference(500), 550);
  EXPECT_EQ(bent.ToReference(1'500), 1'600);
  EXPECT_EQ(bent.ToReference(-1'000), -1'100);
  EXPECT_EQ(bent.ToReference(10'000), 10'100);
}

// A worker's first estimate is a burst of probes a few hundred
// microseconds apart, each uncertain by tens of microseconds: their slope
// (here 13 %) is noise, and a trace that lasts a second after them must not
// be stretched by it.
TEST(ClockModel, ABurstOfProbesDoesNotPredictDrift) {
  ClockModel burst(Offsets({{1'000'000, 5'000, 30'000},
                            {1'100'000, 20'000, 33'000},
                            {1'260'000, 38'000, 33'000}}));
  EXPECT_EQ(burst.DriftPpm(), 0);
  // After the last probe: its offset, unchanged.
  EXPECT_EQ(burst.ToReference(1'001'260'000), 1'001'260'000 + 38'000);
  // Before the first: the first probe's offset.
  EXPECT_EQ(burst.ToReference(0), 5'000);
  // Between probes, still the line through them.
  EXPECT_EQ(burst.ToReference(1'050'000), 1'050'000 + 12'500);
}

// Drift that the measurements resolve is extrapolated: a burst at the
// start and heartbeats over 20 s of a clock 2000 ppm slow, each probe
// uncertain by 50 us. After the last heartbeat the model follows the slope
// to the nearest measurement that resolves it to 10 ppm (the one 10 s
// back), not the noisy pair of the last two heartbeats.
TEST(ClockModel, ResolvedDriftIsExtrapolatedFromAFarEnoughMeasurement) {
  proto::ClockRecord record;
  auto add = [&](int64_t local, int64_t offset) {
    proto::ClockOffset* o = record.add_offsets();
    o->set_local_monotonic_ns(local);
    o->set_offset_ns(offset);
    o->set_uncertainty_ns(50'000);
  };
  for (int i = 0; i < 4; ++i) add(100'000 * i, 200 * i);
  for (int s = 1; s <= 20; ++s) {
    // 2000 ppm, with +-40 us of noise on alternate heartbeats.
    add(int64_t{1'000'000'000} * s,
        2'000'000 * s + (s % 2 == 0 ? 40'000 : -40'000));
  }
  const ClockModel model(record);
  EXPECT_NEAR(model.DriftPpm(), -2000, 10);
  const int64_t later = int64_t{25'000'000'000};
  EXPECT_NEAR(static_cast<double>(model.ToReference(later) - later),
              2000e-6 * 25e9, 60'000);
}

TEST(ClockModel, OrderOfRecordsDoesNotMatterAndTheMostCertainWins) {
  ClockModel model(Offsets({{3'000, 300, 5},
                            {1'000, 999, 80},  // less certain, same instant
                            {1'000, 100, 2}}));
  EXPECT_EQ(model.ToReference(1'000), 1'100);
  EXPECT_EQ(model.ToReference(2'000), 2'200);
  EXPECT_EQ(model.UncertaintyAt(1'000), base::kClockCompareFloorNs);
}

TEST(ClockModel, NegativeUncertaintyReadsAsTheFloor) {
  ClockModel model(Offsets({{0, 1, -5}}));
  EXPECT_EQ(model.UncertaintyAt(0), base::kClockCompareFloorNs);
}

TEST(ClockModel, RealtimeFromTheNearestSnapshot) {
  proto::ClockRecord record;
  auto* a = record.add_snapshots();
  a->set_monotonic_ns(10'000);
  a->set_realtime_ns(1'700'000'000'000'010'000);
  auto* b = record.add_snapshots();  // wall clock stepped by +5 µs since
  b->set_monotonic_ns(100);
  b->set_realtime_ns(1'700'000'000'000'005'100 - 10'000);
  ClockModel model(record);
  EXPECT_FALSE(model.has_reference()) << "snapshots are not offsets";
  EXPECT_EQ(model.ToReference(42), 42);
  EXPECT_EQ(model.ToRealtime(150), 1'700'000'000'000'005'150 - 10'000);
  EXPECT_EQ(model.ToRealtime(9'000), 1'700'000'000'000'009'000);
  EXPECT_EQ(model.ToRealtime(20'000), 1'700'000'000'000'020'000);
}

TEST(ClockModel, BuiltFromAFilesClockRecords) {
  std::string data;
  auto w = *TraceWriter::Create(MakeStringSink(&data));
  proto::ClockOffset o;
  o.set_local_monotonic_ns(0);
  o.set_offset_ns(1'000);
  w->AddClockOffset(o);
  ASSERT_TRUE(w->Flush().ok());
  o.set_local_monotonic_ns(1'000'000);
  o.set_offset_ns(2'000);
  w->AddClockOffset(o);
  w->AddClockSnapshot(0, 555);
  ASSERT_TRUE(w->Close().ok());
  auto reader = testing::OpenOrDie(data);
  ClockModel model(reader->clock());
  EXPECT_EQ(model.ToReference(500'000), 501'500);
  EXPECT_DOUBLE_EQ(model.DriftPpm(), -1'000.0);
  EXPECT_EQ(model.ToRealtime(10), 565);
}

TEST(ClockModel, CursorEqualsToReferenceBitForBit) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    proto::ClockRecord record;
    const int points = static_cast<int>(rng() % 6);
    for (int i = 0; i < points; ++i) {
      proto::ClockOffset* o = record.add_offsets();
      o->set_local_monotonic_ns(
          static_cast<int64_t>(rng() % 1'000'000'000'000));
      o->set_offset_ns(static_cast<int64_t>(rng() % 2'000'000'000) -
                       1'000'000'000);
      o->set_uncertainty_ns(static_cast<int64_t>(rng() % 3) *
                            static_cast<int64_t>(rng() % 100'000'000));
    }
    const ClockModel model(record);
    ClockModel::Cursor cursor(model);
    int64_t t = -static_cast<int64_t>(rng() % 100'000'000'000);
    for (int i = 0; i < 3000; ++i) {
      t += static_cast<int64_t>(rng() % 2'000'000'000);
      if (rng() % 40 == 0) t -= static_cast<int64_t>(rng() % 800'000'000'000);
      ASSERT_EQ(cursor.ToReference(t), model.ToReference(t))
          << "seed " << seed << " t " << t;
    }
  }
}

TEST(ClockModel, AbsurdRecordsStayDefinedThroughTheCursor) {
  // Offsets at the ends of int64: sums must wrap and interpolated offsets
  // saturate (under UBSan an overflow here fails the test).
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const ClockModel model(
      Offsets({{kMin, kMax, 0}, {0, kMin, 0}, {kMax, kMax, 0}}));
  ClockModel::Cursor cursor(model);
  for (int64_t t : {kMin, kMin + 1, int64_t{-1}, int64_t{0}, int64_t{1},
                    kMax - 1, kMax, int64_t{0}, kMin}) {
    EXPECT_EQ(cursor.ToReference(t), model.ToReference(t)) << t;
  }
  const ClockModel one(Offsets({{5, kMax, 0}}));
  ClockModel::Cursor one_cursor(one);
  EXPECT_EQ(one_cursor.ToReference(kMax), one.ToReference(kMax));
  EXPECT_EQ(one.ToReference(1), kMin) << "wraps";
}

}  // namespace
}  // namespace podscope::trace_format
