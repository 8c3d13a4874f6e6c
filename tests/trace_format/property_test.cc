// Randomised round trips with fixed seeds: many small traces of nested and
// overlapping slices, instants, counters, samples, args and flows on several
// tracks, cut into many small chunks. The reader must return exactly the
// events written, in reader order, with args and flows on the right events
// and the depths a brute-force computation gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/writer.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

using testing::EventLog;
using testing::FlatEvent;
using testing::FlatKind;

enum class SliceMode { kNestedEndOrder, kNestedRandomOrder, kOverlapping };

struct SliceSpec {
  int64_t start;
  int64_t duration;
};

class Random {
 public:
  explicit Random(uint32_t seed) : engine_(seed) {}
  int64_t Uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine_);
  }
  bool Chance(double p) { return std::bernoulli_distribution(p)(engine_); }
  std::mt19937& engine() { return engine_; }

 private:
  std::mt19937 engine_;
};

// Appends, children before parents (end order), a random forest of properly
// nested slices inside [lo, hi]. Siblings are strictly apart so that the
// closed intervals nest; a child may equal its parent or be empty.
void GenerateForest(Random& rng, int64_t lo, int64_t hi, int depth,
                    std::vector<SliceSpec>* out) {
  int64_t cursor = lo;
  const int children = static_cast<int>(rng.Uniform(0, depth == 0 ? 5 : 3));
  for (int c = 0; c < children && cursor <= hi; ++c) {
    int64_t start, end;
    if (depth > 0 && c == 0 && rng.Chance(0.1)) {
      start = lo;  // identical to the parent
      end = hi;
    } else {
      start = cursor + rng.Uniform(0, std::max<int64_t>((hi - cursor) / 3, 0));
      end = rng.Chance(0.1) ? start
                            : start + rng.Uniform(0, (hi - start) * 2 / 3);
    }
    if (depth < 4 && end > start)
      GenerateForest(rng, start, end, depth + 1, out);
    out->push_back({start, end - start});
    cursor = end + 1;
  }
}

struct TrackPlan {
  uint32_t id = 0;
  SliceMode mode = SliceMode::kNestedEndOrder;
};

// What a random trace was made of.
struct RandomTrace {
  std::string data;
  EventLog log;
  std::vector<TrackPlan> tracks;
  int64_t min_ts = 0;
  int64_t max_ts = 0;
};

std::vector<Arg> RandomArgs(Random& rng, TraceWriter& w) {
  std::vector<Arg> args;
  const int n = static_cast<int>(rng.Uniform(1, 3));
  for (int i = 0; i < n; ++i) {
    const uint32_t key =
        w.InternString("k" + std::to_string(rng.Uniform(0, 3)));
    switch (rng.Uniform(0, 2)) {
      case 0:
        args.push_back({key, rng.Uniform(-1'000'000, 1'000'000)});
        break;
      case 1:
        args.push_back({key, rng.Uniform(-1000, 1000) / 7.0});
        break;
      default:
        args.push_back({key, StringId{w.InternString(
                                 "v" + std::to_string(rng.Uniform(0, 9)))}});
    }
  }
  return args;
}

RandomTrace MakeRandomTrace(uint32_t seed, bool allow_overlap) {
  Random rng(seed);
  RandomTrace trace;
  WriterOptions options;
  options.chunk_events = static_cast<size_t>(rng.Uniform(1, 12));
  options.compression_level = static_cast<int>(rng.Uniform(0, 9));  // 0: raw
  // Every fourth seed writes the protobuf chunks of format 1.0.
  options.packed_chunks = seed % 4 != 0;
  // Every third seed encodes chunks on the writer's own thread, queueing
  // at most two.
  options.background_thread = seed % 3 == 1;
  options.max_queued_chunks = 2;
  auto created = TraceWriter::Create(MakeStringSink(&trace.data), options);
  EXPECT_TRUE(created.ok());
  TraceWriter& w = **created;

  const int64_t base = rng.Chance(0.2) ? -rng.Uniform(0, 1'000'000)
                                       : rng.Uniform(0, 1'000'000'000);
  const int64_t span = rng.Uniform(10, 5'000);
  trace.min_ts = base;
  trace.max_ts = base + span;

  // Each track's events in the order the writer gets them.
  struct Op {
    FlatKind kind;
    int64_t ts;
    int64_t duration;
  };
  std::vector<std::vector<Op>> ops;
  const int track_count = static_cast<int>(rng.Uniform(1, 4));
  for (int t = 0; t < track_count; ++t) {
    TrackPlan plan;
    proto::Track track;
    track.set_kind(proto::TRACK_KIND_THREAD);
    track.set_name("t" + std::to_string(t));
    plan.id = w.AddTrack(track);
    plan.mode = static_cast<SliceMode>(rng.Uniform(0, allow_overlap ? 2 : 1));
    std::vector<SliceSpec> slices;
    if (plan.mode == SliceMode::kOverlapping) {
      for (int i = rng.Uniform(0, 20); i > 0; --i) {
        const int64_t start = base + rng.Uniform(0, span);
        slices.push_back({start, rng.Uniform(0, span / 4)});
      }
    } else {
      GenerateForest(rng, base, base + span, 0, &slices);
      if (plan.mode == SliceMode::kNestedRandomOrder) {
        std::shuffle(slices.begin(), slices.end(), rng.engine());
      }
    }
    std::vector<Op> track_ops;
    for (const SliceSpec& s : slices) {
      track_ops.push_back({FlatKind::kSlice, s.start, s.duration});
    }
    for (int i = rng.Uniform(0, 8); i > 0; --i) {
      const auto kind = static_cast<FlatKind>(rng.Uniform(1, 3));
      const auto at = track_ops.begin() + rng.Uniform(0, track_ops.size());
      track_ops.insert(at, {kind, base + rng.Uniform(0, span), 0});
    }
    ops.push_back(std::move(track_ops));
    trace.tracks.push_back(plan);
  }

  // Interleave the tracks, keeping each track's own order.
  std::vector<size_t> next(ops.size(), 0);
  uint32_t serial = 0;
  uint64_t flow_id = 0;
  while (true) {
    std::vector<size_t> open;
    for (size_t t = 0; t < ops.size(); ++t) {
      if (next[t] < ops[t].size()) open.push_back(t);
    }
    if (open.empty()) break;
    const size_t t = open[rng.Uniform(0, open.size() - 1)];
    const Op& op = ops[t][next[t]++];
    const uint32_t track = trace.tracks[t].id;
    // Unique names make every event identifiable in the comparisons.
    const uint32_t name = w.InternString("e" + std::to_string(serial++));
    std::optional<EventRef> ref;
    std::vector<Arg> args;
    if ((op.kind == FlatKind::kSlice || op.kind == FlatKind::kInstant) &&
        rng.Chance(0.3)) {
      args = RandomArgs(rng, w);
    }
    switch (op.kind) {
      case FlatKind::kSlice:
        ref = w.AddSlice(track, op.ts, op.duration, name, args);
        trace.log.AddSlice(track, op.ts, op.duration, name, args);
        break;
      case FlatKind::kInstant:
        ref = w.AddInstant(track, op.ts, name, args);
        trace.log.AddInstant(track, op.ts, name, args);
        break;
      case FlatKind::kCounter: {
        const double v = rng.Chance(0.5) ? rng.Uniform(-100, 100)
                                         : rng.Uniform(-100, 100) / 3.0;
        w.AddCounter(track, op.ts, v);
        trace.log.AddCounter(track, op.ts, v);
        break;
      }
      case FlatKind::kSample: {
        const auto stack = static_cast<uint32_t>(rng.Uniform(1, 5));
        w.AddSample(track, op.ts, stack);
        trace.log.AddSample(track, op.ts, stack);
        break;
      }
    }
    for (int f = ref && rng.Chance(0.2) ? rng.Uniform(1, 2) : 0; f > 0; --f) {
      const auto phase = static_cast<FlowPhase>(rng.Uniform(0, 2));
      const uint64_t id = rng.Chance(0.5) ? ++flow_id : flow_id;
      w.AddFlow(*ref, id, phase);
      trace.log.AddFlowToLast(id, phase);
    }
    if (rng.Chance(0.03)) {
      EXPECT_TRUE(w.Flush().ok());
    }
  }
  EXPECT_TRUE(w.Close().ok());
  return trace;
}

// Every check a user of ReadTrack relies on, for one track.
void CheckTrack(const TraceReader& reader, const RandomTrace& trace,
                const TrackPlan& plan, Random& rng) {
  SCOPED_TRACE("track " + std::to_string(plan.id) + " mode " +
               std::to_string(static_cast<int>(plan.mode)));
  const TrackEvents all = reader.ReadTrack(plan.id);
  EXPECT_EQ(all.track_id, plan.id);
  EXPECT_EQ(testing::Sorted(testing::Flatten(all)),
            trace.log.Overlapping(plan.id, INT64_MIN, INT64_MAX));
  EXPECT_TRUE(std::is_sorted(all.slices.begin(), all.slices.end(), SliceOrder));
  auto by_ts = [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; };
  EXPECT_TRUE(std::is_sorted(all.instants.begin(), all.instants.end(), by_ts));
  EXPECT_TRUE(std::is_sorted(all.counters.begin(), all.counters.end(), by_ts));
  EXPECT_TRUE(std::is_sorted(all.samples.begin(), all.samples.end(), by_ts));
  auto key = [](const auto& x) { return std::make_pair(x.kind, x.index); };
  EXPECT_TRUE(std::is_sorted(
      all.args.begin(), all.args.end(),
      [&](const auto& a, const auto& b) { return key(a) < key(b); }));
  EXPECT_TRUE(std::is_sorted(
      all.flows.begin(), all.flows.end(),
      [&](const auto& a, const auto& b) { return key(a) < key(b); }));

  const std::vector<uint32_t> brute = testing::BruteForceDepths(all.slices);
  for (size_t i = 0; i < all.slices.size(); ++i) {
    const Slice& s = all.slices[i];
    if (plan.mode != SliceMode::kOverlapping) {
      EXPECT_EQ(s.depth, brute[i]) << "slice " << i << " at " << s.start_ns;
      continue;
    }
    // Overlapping slices have no single right depth; a slice's depth must
    // still be explained by an enclosing slice one level up.
    EXPECT_LE(s.depth, brute[i]);
    if (s.depth == 0) continue;
    bool has_parent = false;
    for (size_t j = 0; j < i && !has_parent; ++j) {
      const Slice& p = all.slices[j];
      has_parent = p.depth + 1 == s.depth && p.start_ns <= s.start_ns &&
                   p.end_ns() >= s.end_ns();
    }
    EXPECT_TRUE(has_parent) << "slice " << i << " at depth " << s.depth;
  }

  for (int q = 0; q < 4; ++q) {
    int64_t t0 = rng.Uniform(trace.min_ts - 10, trace.max_ts + 10);
    int64_t t1 = rng.Uniform(trace.min_ts - 10, trace.max_ts + 10);
    if (t0 > t1) std::swap(t0, t1);
    if (q == 0) t1 = t0;  // a single instant of time
    const TrackEvents range = reader.ReadTrack(plan.id, t0, t1);
    EXPECT_EQ(testing::Sorted(testing::Flatten(range)),
              trace.log.Overlapping(plan.id, t0, t1))
        << "range [" << t0 << ", " << t1 << "]";
    EXPECT_TRUE(
        std::is_sorted(range.slices.begin(), range.slices.end(), SliceOrder));
    if (plan.mode == SliceMode::kOverlapping) continue;
    // A range query keeps the depths of the whole track. Identical
    // intervals may swap places (and so depths), so compare intervals with
    // depths as multisets.
    std::multiset<std::tuple<int64_t, int64_t, uint32_t>> got, want;
    for (const Slice& s : range.slices) {
      got.emplace(s.start_ns, s.duration_ns, s.depth);
    }
    for (const Slice& s : all.slices) {
      if (s.end_ns() >= t0 && s.start_ns <= t1) {
        want.emplace(s.start_ns, s.duration_ns, s.depth);
      }
    }
    EXPECT_EQ(got, want) << "range [" << t0 << ", " << t1 << "]";
  }
}

void CheckRandomTrace(uint32_t seed, bool allow_overlap) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomTrace trace = MakeRandomTrace(seed, allow_overlap);
  const std::vector<FlatEvent> expected = trace.log.All();
  Random rng(seed ^ 0x9e3779b9u);
  for (bool verify_all : {false, true}) {
    SCOPED_TRACE(verify_all ? "scanned" : "through the index");
    auto reader = testing::OpenOrDie(trace.data, {.verify_all = verify_all});
    ASSERT_NE(reader, nullptr);
    EXPECT_TRUE(reader->report().intact());
    if (!verify_all) {
      EXPECT_EQ(reader->known_event_count(), expected.size());
    }
    const int threads = verify_all ? 2 : 1;
    EXPECT_EQ(testing::ReadAllFlat(*reader, threads), expected);
    for (const TrackPlan& plan : trace.tracks) {
      CheckTrack(*reader, trace, plan, rng);
    }
    if (::testing::Test::HasFailure()) return;  // one report per seed
  }
}

TEST(Property, NestedSlicesInEndAndRandomOrder) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    CheckRandomTrace(seed, /*allow_overlap=*/false);
    if (HasFailure()) return;
  }
}

TEST(Property, NestedAndOverlappingSlicesMixed) {
  for (uint32_t seed = 1000; seed < 1300; ++seed) {
    CheckRandomTrace(seed, /*allow_overlap=*/true);
    if (HasFailure()) return;
  }
}

// A deep, long chain of nested slices split across many one-event chunks:
// every chunk holds a single slice, so depths come only from merging.
TEST(Property, DeepNestingAcrossOneEventChunks) {
  std::string data;
  auto w = *TraceWriter::Create(MakeStringSink(&data), {.chunk_events = 1});
  const uint32_t track = w->AddTrack(proto::Track());
  const int kDepth = 200;
  for (int d = kDepth - 1; d >= 0; --d) {  // innermost first: end order
    w->AddSlice(track, d, 2 * (kDepth - d), w->InternString(std::to_string(d)));
  }
  ASSERT_TRUE(w->Close().ok());
  auto reader = testing::OpenOrDie(data);
  EXPECT_EQ(reader->chunks().size(), static_cast<size_t>(kDepth));
  const TrackEvents e = reader->ReadTrack(track);
  ASSERT_EQ(e.slices.size(), static_cast<size_t>(kDepth));
  for (int d = 0; d < kDepth; ++d) {
    EXPECT_EQ(e.slices[d].start_ns, d);
    EXPECT_EQ(e.slices[d].depth, static_cast<uint32_t>(d));
  }
  const TrackEvents inner = reader->ReadTrack(track, kDepth, kDepth);
  EXPECT_EQ(inner.slices.size(), static_cast<size_t>(kDepth));
  const TrackEvents outer = reader->ReadTrack(track, -5, 0);
  ASSERT_EQ(outer.slices.size(), 1u);
  EXPECT_EQ(outer.slices[0].depth, 0u);
}

}  // namespace
}  // namespace podscope::trace_format
