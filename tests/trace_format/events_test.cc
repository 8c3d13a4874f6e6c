// Round trips of the events of every kind through the writer and the
// reader: instants, counters (every value bit for bit), samples, args,
// flows, extreme times.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

using testing::NewWriter;
using testing::OpenBothWays;
using testing::OpenOrDie;
using testing::ThreadTrack;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RoundTrip, InstantsCountersAndSamplesSortByTime) {
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t track = ThreadTrack(*w, "t");
  const uint32_t n1 = w->InternString("one");
  const uint32_t n2 = w->InternString("two");
  w->AddInstant(track, 30, n2);
  w->AddInstant(track, -10, n1);  // before the epoch
  w->AddInstant(track, 30, n1);
  w->AddCounter(track, 5, 2);
  w->AddCounter(track, 1, -7);
  ASSERT_TRUE(w->Close().ok());
  for (const auto& r : OpenBothWays(data)) {
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.instants.size(), 3u);
    EXPECT_EQ(e.instants[0], (Instant{-10, n1}));
    // Equal times keep the order they were added in.
    EXPECT_EQ(e.instants[1], (Instant{30, n2}));
    EXPECT_EQ(e.instants[2], (Instant{30, n1}));
    ASSERT_EQ(e.counters.size(), 2u);
    EXPECT_EQ(e.counters[0], (CounterSample{1, -7}));
    EXPECT_EQ(e.counters[1], (CounterSample{5, 2}));
  }
}

// Counter values must come back bit for bit, whichever column holds them.
void ExpectCountersRoundTrip(const std::vector<double>& values,
                             bool expect_integer_column) {
  for (const bool packed : {true, false}) {
    SCOPED_TRACE(packed ? "packed chunks" : "protobuf chunks");
    std::string data;
    WriterOptions options;
    options.packed_chunks = packed;
    auto w = NewWriter(&data, options);
    proto::Track t;
    t.set_kind(proto::TRACK_KIND_COUNTER);
    const uint32_t track = w->AddTrack(t);
    for (size_t i = 0; i < values.size(); ++i) {
      w->AddCounter(track, static_cast<int64_t>(i) * 10, values[i]);
    }
    ASSERT_TRUE(w->Close().ok());
    auto r = OpenOrDie(data);
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.counters.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint64_t>(e.counters[i].value),
                std::bit_cast<uint64_t>(values[i]))
          << "value " << i << ": wrote " << values[i] << ", read "
          << e.counters[i].value;
    }
    if (packed) {
      std::map<uint32_t, uint32_t> flags;
      ASSERT_TRUE(
          testing::ReadPackedTrackFlags(data, r->chunks()[0].offset, &flags));
      EXPECT_EQ((flags[track] & testing::kPackedIntegralCounters) != 0,
                expect_integer_column);
      continue;
    }
    proto::Chunk chunk;
    ASSERT_TRUE(testing::ReadChunkProto(data, r->chunks()[0].offset, &chunk));
    EXPECT_EQ(chunk.tracks(0).counter_int_delta_size() > 0,
              expect_integer_column);
  }
}

TEST(RoundTrip, IntegralCountersUseIntegerDeltas) {
  ExpectCountersRoundTrip(
      {0, 1, 1'000'000, -3, 4'000'000'000'000.0, 8.9e15, -8.9e15, 0},
      /*expect_integer_column=*/true);
}

TEST(RoundTrip, NonIntegralCountersKeepEveryBit) {
  ExpectCountersRoundTrip({0.5, 1.0 / 3, 1e300, -1e-300}, false);
}

TEST(RoundTrip, SpecialCounterValuesKeepEveryBit) {
  ExpectCountersRoundTrip({1, kNaN, 2}, false);
  ExpectCountersRoundTrip({kInf, -kInf, 3}, false);
  ExpectCountersRoundTrip({1, -0.0, 2}, false);
  // Integral, but beyond what the integer column represents exactly.
  ExpectCountersRoundTrip({std::ldexp(1.0, 62), 1}, false);
  ExpectCountersRoundTrip({1e16, 1}, false);
}

TEST(RoundTrip, ArgsOnSlicesAndInstants) {
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t track = ThreadTrack(*w, "t");
  const uint32_t name = w->InternString("op");
  const uint32_t k_int = w->InternString("bytes");
  const uint32_t k_double = w->InternString("ratio");
  const uint32_t k_string = w->InternString("kind");
  const uint32_t v_string = w->InternString("gemm \xE2\x9C\x93");
  const ArgList slice_args = {{k_int, std::numeric_limits<int64_t>::min()},
                              {k_double, -0.125},
                              {k_string, StringId{v_string}},
                              {k_int, std::numeric_limits<int64_t>::max()}};
  const ArgList instant_args = {{k_double, kInf}, {k_int, int64_t{-1}}};
  // The child comes first (end order): its args must follow it when the
  // writer reorders slices.
  w->AddSlice(track, 20, 5, name, slice_args);
  w->AddSlice(track, 10, 50, name);
  w->AddInstant(track, 40, name, instant_args);
  w->AddInstant(track, 15, name);
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.slices.size(), 2u);
    EXPECT_EQ(e.slices[1].start_ns, 20);
    EXPECT_EQ(e.FindArgs(EventKind::kSlice, 0), nullptr);
    const EventArgs* a = e.FindArgs(EventKind::kSlice, 1);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->args, slice_args);
    ASSERT_EQ(e.instants.size(), 2u);
    EXPECT_EQ(e.instants[1].ts_ns, 40);
    EXPECT_EQ(e.FindArgs(EventKind::kInstant, 0), nullptr);
    const EventArgs* ia = e.FindArgs(EventKind::kInstant, 1);
    ASSERT_NE(ia, nullptr);
    EXPECT_EQ(ia->args, instant_args);
    // The value types survive: an int is not read back as a string id.
    EXPECT_TRUE(std::holds_alternative<StringId>(a->args[2].value));
    EXPECT_TRUE(std::holds_alternative<int64_t>(a->args[0].value));
    EXPECT_TRUE(std::holds_alternative<double>(ia->args[0].value));
  }
}

TEST(RoundTrip, FlowsOnSlicesAndInstants) {
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t host = ThreadTrack(*w, "host");
  proto::Track stream;
  stream.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
  const uint32_t device = w->AddTrack(stream);
  const uint32_t name = w->InternString("launch");
  const uint64_t big_id = (uint64_t{1} << 63) + 5;
  // A child slice added first and its parent later: the flow must stay on
  // the child after reordering.
  w->AddFlow(w->AddSlice(host, 110, 10, name), big_id, FlowPhase::kBegin);
  w->AddSlice(host, 100, 100, name);
  EventRef step = w->AddInstant(host, 150, name);
  w->AddFlow(step, big_id, FlowPhase::kStep);
  w->AddFlow(step, 9, FlowPhase::kBegin);  // two flows on one event
  w->AddFlow(w->AddSlice(device, 300, 50, name), big_id, FlowPhase::kEnd);
  w->AddFlow(w->AddInstant(device, 400, name), 9, FlowPhase::kEnd);
  ASSERT_TRUE(w->Close().ok());

  for (const auto& r : OpenBothWays(data)) {
    TrackEvents h = r->ReadTrack(host);
    ASSERT_EQ(h.flows.size(), 3u);
    EXPECT_EQ(h.flows[0],
              (FlowLink{EventKind::kSlice, 1, big_id, FlowPhase::kBegin}));
    EXPECT_EQ(h.slices[1].start_ns, 110);
    EXPECT_EQ(h.flows[1],
              (FlowLink{EventKind::kInstant, 0, big_id, FlowPhase::kStep}));
    EXPECT_EQ(h.flows[2],
              (FlowLink{EventKind::kInstant, 0, 9, FlowPhase::kBegin}));
    TrackEvents d = r->ReadTrack(device);
    ASSERT_EQ(d.flows.size(), 2u);
    EXPECT_EQ(d.flows[0],
              (FlowLink{EventKind::kSlice, 0, big_id, FlowPhase::kEnd}));
    EXPECT_EQ(d.flows[1],
              (FlowLink{EventKind::kInstant, 0, 9, FlowPhase::kEnd}));
  }
}

TEST(RoundTrip, ExtremeTimestamps) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::string data;
  auto w = NewWriter(&data);
  const uint32_t track = ThreadTrack(*w, "t");
  const uint32_t n = w->InternString("n");
  w->AddInstant(track, kMax, n);
  w->AddInstant(track, kMin, n);
  w->AddInstant(track, 0, n);
  w->AddCounter(track, kMax, 1);
  w->AddCounter(track, kMin, 2);
  w->AddSample(track, kMin, 1);
  w->AddSample(track, kMax, 2);
  w->AddSlice(track, kMin, 10, n);
  w->AddSlice(track, kMax - 5, 100, n);  // its end is beyond int64
  ASSERT_TRUE(w->Close().ok());
  for (const auto& r : OpenBothWays(data)) {
    TrackEvents e = r->ReadTrack(track);
    ASSERT_EQ(e.instants.size(), 3u);
    EXPECT_EQ(e.instants[0].ts_ns, kMin);
    EXPECT_EQ(e.instants[1].ts_ns, 0);
    EXPECT_EQ(e.instants[2].ts_ns, kMax);
    ASSERT_EQ(e.counters.size(), 2u);
    EXPECT_EQ(e.counters[0], (CounterSample{kMin, 2}));
    EXPECT_EQ(e.counters[1], (CounterSample{kMax, 1}));
    ASSERT_EQ(e.samples.size(), 2u);
    EXPECT_EQ(e.samples[0], (StackSample{kMin, 1}));
    EXPECT_EQ(e.samples[1], (StackSample{kMax, 2}));
    ASSERT_EQ(e.slices.size(), 2u);
    EXPECT_EQ(e.slices[0], (Slice{kMin, 10, n, 0}));
    EXPECT_EQ(e.slices[1].start_ns, kMax - 5);
    EXPECT_EQ(e.slices[1].end_ns(), kMax) << "saturates";
    EXPECT_EQ(r->ReadTrack(track, kMax, kMax).event_count(), 4u);
  }
}

TEST(RoundTrip, EventsOnUnknownTrackIdsAreKept) {
  std::string data;
  auto w = NewWriter(&data);
  w->AddInstant(0, 5, w->InternString("lost?"));
  ASSERT_TRUE(w->Close().ok());
  auto r = OpenOrDie(data);
  ASSERT_EQ(r->tracks().size(), 1u);
  EXPECT_NE(r->tracks()[0].name().find("track id 0"), std::string::npos);
  EXPECT_EQ(r->ReadTrack(r->tracks()[0].id()).instants.size(), 1u);
}

}  // namespace
}  // namespace podscope::trace_format
