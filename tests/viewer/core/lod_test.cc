// The level-of-detail queries against brute force on random traces.
#include "podscope/viewer/lod.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "podscope/viewer/bucket_tree.h"
#include "podscope/viewer/slice_columns.h"
#include "trace_gen.h"

namespace podscope::viewer {
namespace {

using trace_format::Slice;

// Checks QueryBusy(t0, t1, pixels) of every depth against the summed
// overlap of each slice with each pixel.
void CheckBusy(const SliceColumns& c, int64_t t0, int64_t t1, uint32_t pixels) {
  const PixelGrid grid(t0, t1, pixels);
  for (uint32_t d = 0; d < c.depth_count(); ++d) {
    const std::vector<float> got = QueryBusy(c, d, t0, t1, pixels);
    ASSERT_EQ(got.size(), pixels) << "depth " << d;
    for (uint32_t p = 0; p < pixels; ++p) {
      const int64_t from = grid.Bound(p), to = grid.Bound(p + 1);
      if (to <= from) {
        EXPECT_EQ(got[p], 0.0f);
        continue;
      }
      int64_t busy = 0;
      for (uint32_t i = c.depth_begin(d); i < c.depth_end(d); ++i) {
        const int64_t a = std::max(c.start(i), from);
        const int64_t b = std::min(c.covered_end(i), to);
        if (b > a) busy += b - a;
      }
      const float want = static_cast<float>(std::min(
          static_cast<double>(busy) / static_cast<double>(to - from), 1.0));
      ASSERT_EQ(got[p], want)
          << "depth " << d << " pixel " << p << " of " << pixels << ", busy "
          << busy << " ns of " << (to - from);
    }
  }
}

// Checks QuerySlices(t0, t1, pixels) against every (pixel, depth) by brute
// force, and QueryBusy too.
void CheckWindow(const SliceColumns& c, int64_t t0, int64_t t1,
                 uint32_t pixels) {
  SCOPED_TRACE(::testing::Message()
               << "window [" << t0 << ", " << t1 << ") at " << pixels << " px");
  std::vector<std::vector<float>> busy;
  const std::vector<VisibleSlice> got = QuerySlices(c, t0, t1, pixels, &busy);
  // With busy shares: QueryBusy's, for the depths with sub-pixel slices.
  const std::vector<VisibleSlice> plain = QuerySlices(c, t0, t1, pixels);
  ASSERT_EQ(got.size(), plain.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].index, plain[i].index);
  }
  ASSERT_EQ(busy.size(), c.depth_count());
  for (uint32_t d = 0; d < c.depth_count(); ++d) {
    const bool sub_pixel =
        std::any_of(got.begin(), got.end(), [&](const VisibleSlice& v) {
          return v.depth == d && v.representative;
        });
    if (sub_pixel) {
      EXPECT_EQ(busy[d], QueryBusy(c, d, t0, t1, pixels)) << "depth " << d;
    } else {
      EXPECT_TRUE(busy[d].empty()) << "depth " << d;
    }
  }
  const PixelGrid grid(t0, t1, pixels);
  std::set<uint32_t> returned;
  for (const VisibleSlice& v : got) {
    ASSERT_TRUE(returned.insert(v.index).second) << "slice twice: " << v.index;
    const Slice s = c.Get(v.index);
    EXPECT_EQ(v.start_ns, s.start_ns);
    EXPECT_EQ(v.duration_ns, s.duration_ns);
    EXPECT_EQ(v.depth, s.depth);
    EXPECT_EQ(v.name, s.name);
    EXPECT_EQ(v.representative, !grid.Wide(s.duration_ns));
  }
  // Ordered by depth, then start.
  for (size_t i = 1; i < got.size(); ++i) {
    EXPECT_TRUE(std::make_pair(got[i - 1].depth, got[i - 1].start_ns) <=
                std::make_pair(got[i].depth, got[i].start_ns));
  }
  std::map<uint32_t, size_t> representatives;  // by depth
  std::set<uint32_t> justified;  // representatives that are a pixel's longest
  for (uint32_t d = 0; d < c.depth_count(); ++d) {
    for (uint32_t i = c.depth_begin(d); i < c.depth_end(d); ++i) {
      const bool touches = c.start(i) < t1 && c.covered_end(i) > t0;
      if (!touches) {
        EXPECT_FALSE(returned.count(i)) << "slice outside the window: " << i;
      } else if (grid.Wide(c.duration(i))) {
        EXPECT_TRUE(returned.count(i)) << "wide slice missed: " << i;
      }
    }
    for (uint32_t p = 0; p < pixels; ++p) {
      const int64_t from = grid.Bound(p), to = grid.Bound(p + 1);
      int64_t longest = -1;
      std::vector<uint32_t> in_pixel;
      for (uint32_t i = c.depth_begin(d); i < c.depth_end(d); ++i) {
        if (c.start(i) < to && c.covered_end(i) > from) {
          in_pixel.push_back(i);
          longest = std::max(longest, c.duration(i));
        }
      }
      if (in_pixel.empty()) continue;
      size_t longest_returned = 0;
      for (uint32_t i : in_pixel) {
        if (returned.count(i) && c.duration(i) == longest) {
          ++longest_returned;
          justified.insert(i);
        }
      }
      EXPECT_GE(longest_returned, 1u)
          << "pixel " << p << " depth " << d << " has no representative";
    }
  }
  for (const VisibleSlice& v : got) {
    if (!v.representative) continue;
    ++representatives[v.depth];
    EXPECT_TRUE(justified.count(v.index))
        << "sub-pixel slice " << v.index << " is not the longest of a pixel";
  }
  for (const auto& [depth, n] : representatives) EXPECT_LE(n, pixels);
  CheckBusy(c, t0, t1, pixels);
}

void CheckTrack(const std::vector<Slice>& slices, std::mt19937_64& rng,
                int windows) {
  const SliceColumns c = SliceColumns::Build(slices, nullptr);
  ASSERT_EQ(c.size(), slices.size());
  int64_t lo = 0, hi = 1;
  for (const Slice& s : slices) hi = std::max(hi, s.end_ns() + 1);
  for (int w = 0; w < windows; ++w) {
    const uint32_t pixels = 1 + static_cast<uint32_t>(rng() % 300);
    int64_t t0, t1;
    switch (w % 3) {
      case 0:  // everything
        t0 = lo - static_cast<int64_t>(rng() % 50);
        t1 = hi + static_cast<int64_t>(rng() % 50);
        break;
      default: {  // a random part, down to a few ns
        t0 = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
        const int64_t len =
            1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo)) /
                    (int64_t{1} << (rng() % 20));
        t1 = t0 + len;
      }
    }
    CheckWindow(c, t0, t1, pixels);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(LodTest, NestedTracksMatchBruteForce) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    const int64_t span = int64_t{1} << (10 + rng() % 30);
    const auto slices =
        testing::RandomNestedSlices(rng, 200 + rng() % 1500, span, 20);
    CheckTrack(slices, rng, 12);
    if (HasFailure()) return;
  }
}

// Thousands of slices per pixel: the query's dense path (whole buckets of
// slices inside one pixel) against brute force.
TEST(LodTest, DenseWindowsMatchBruteForce) {
  for (uint64_t seed = 200; seed <= 205; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    const auto slices = testing::RandomNestedSlices(rng, 20000 + rng() % 20000,
                                                    int64_t{1} << 30, 6);
    const SliceColumns c = SliceColumns::Build(slices, nullptr);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& s : slices) {
      lo = std::min(lo, s.start_ns);
      hi = std::max(hi, s.end_ns() + 1);
    }
    for (int w = 0; w < 6; ++w) {
      const uint32_t pixels = 1 + static_cast<uint32_t>(rng() % 40);
      int64_t t0 = lo, t1 = hi;
      if (w % 2 == 1) {
        t0 = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
        t1 = t0 + (hi - lo) / (2 + static_cast<int64_t>(rng() % 4));
      }
      CheckWindow(c, t0, t1, pixels);
      if (HasFailure()) return;
    }
  }
}

// A painting thread keeps its scratch and result vectors from query to
// query: whatever an earlier query of another track, depth count or width
// left in them, a query returns exactly what a fresh one does.
TEST(LodTest, QueriesIntoKeptBuffersMatchFreshOnes) {
  std::mt19937_64 rng(77);
  std::vector<SliceColumns> tracks;
  std::vector<std::pair<int64_t, int64_t>> extent;
  for (int t = 0; t < 4; ++t) {
    const auto slices = testing::RandomNestedSlices(
        rng, 500 + 10000 * t + rng() % 10000, int64_t{1} << 30, 6);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& s : slices) {
      lo = std::min(lo, s.start_ns);
      hi = std::max(hi, s.end_ns() + 1);
    }
    extent.emplace_back(lo, hi);
    tracks.push_back(SliceColumns::Build(slices, nullptr));
  }
  SliceQueryScratch scratch;
  scratch.Reserve(64);
  std::vector<VisibleSlice> out;
  std::vector<std::vector<float>> busy;
  ReserveSliceQuery(64, 3, &out, &busy);
  int shaded = 0;  // rounds with a depth narrower than a pixel
  for (int round = 0; round < 60; ++round) {
    const size_t t = rng() % tracks.size();
    const SliceColumns& c = tracks[t];
    const auto [lo, hi] = extent[t];
    const uint32_t pixels =
        1 + static_cast<uint32_t>(rng() % (round % 2 == 0 ? 40 : 1000));
    // From the whole track down to a thousandth of it.
    const int64_t t0 =
        lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo));
    const int64_t t1 = t0 + 1 + ((hi - lo) >> (rng() % 10));
    SCOPED_TRACE(::testing::Message() << "round " << round);
    std::vector<std::vector<float>> fresh_busy;
    const std::vector<VisibleSlice> fresh =
        QuerySlices(c, t0, t1, pixels, &fresh_busy);
    QuerySlicesInto(c, t0, t1, pixels, &scratch, &out, &busy);
    ASSERT_EQ(out.size(), fresh.size());
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i].index, fresh[i].index);
      ASSERT_EQ(out[i].depth, fresh[i].depth);
      ASSERT_EQ(out[i].representative, fresh[i].representative);
    }
    ASSERT_EQ(busy, fresh_busy);
    shaded += std::any_of(busy.begin(), busy.end(),
                          [](const auto& b) { return !b.empty(); });
  }
  EXPECT_GT(shaded, 10);
  EXPECT_LT(shaded, 60);
}

TEST(LodTest, OverlappingSlicesAreLaidOutInLanes) {
  for (uint64_t seed = 100; seed <= 120; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(seed);
    const auto slices =
        testing::RandomOverlappingSlices(rng, 300 + rng() % 500, 1 << 20, 5);
    const SliceColumns c = SliceColumns::Build(slices, nullptr);
    // Within a lane no two slices overlap.
    for (uint32_t d = 0; d < c.depth_count(); ++d) {
      for (uint32_t i = c.depth_begin(d) + 1; i < c.depth_end(d); ++i) {
        ASSERT_LE(c.covered_end(i - 1), c.start(i));
      }
    }
    CheckTrack(slices, rng, 9);
    if (HasFailure()) return;
  }
}

TEST(LodTest, LongSlicesBeyondFourSecondsKeepTheirDurations) {
  // Durations and start offsets past 2^32 ns use the side tables.
  std::vector<Slice> slices = {
      {0, int64_t{10} << 32, 1, 0},
      {5, int64_t{6} << 32, 2, 1},
      {(int64_t{7} << 32), int64_t{2} << 32, 3, 1},
      {(int64_t{7} << 32) + 5, 10, 4, 2},
      {int64_t{11} << 32, int64_t{5} << 32, 5, 0},
  };
  const SliceColumns c = SliceColumns::Build(slices, nullptr);
  std::vector<Slice> back;
  for (uint32_t i = 0; i < c.size(); ++i) back.push_back(c.Get(i));
  std::sort(back.begin(), back.end(), trace_format::SliceOrder);
  EXPECT_EQ(back, slices);
  EXPECT_EQ(c.Longest(0, 2), 0u);  // depth 0: the 10 << 32 one
  std::mt19937_64 rng(7);
  CheckTrack(slices, rng, 30);
}

// A thread busy 1 % of the time reads 1 % busy in every pixel of a
// zoomed-out window, however the slices fall; back to back, 100 %.
// Prefix sums read from the total below or above an index, whichever is
// nearer; both must give the exact sum modulo 2^64, up to the column's
// last element whether or not its length is a multiple of the leaf.
TEST(LodTest, BucketSumsPrefixIsExactFromEitherSide) {
  std::mt19937_64 rng(5);
  for (size_t n : {0u, 1u, 31u, 32u, 33u, 100u, 1000u, 1024u}) {
    std::vector<uint64_t> v(n);
    // Values near 2^64 make the sums wrap.
    for (uint64_t& x : v)
      x = rng() % 4 == 0 ? ~uint64_t{0} - rng() % 9 : rng() % 1000;
    BucketSums sums;
    auto value = [&v](size_t i) { return v[i]; };
    sums.Build(n, value);
    uint64_t expected = 0;
    for (size_t i = 0; i <= n; ++i) {
      EXPECT_EQ(sums.Prefix(i, value), expected) << "n " << n << " i " << i;
      if (i < n) expected += v[i];
    }
  }
}

TEST(LodTest, BusyShareOfSparseAndSaturatedTracks) {
  std::vector<Slice> sparse, full;
  for (int64_t i = 0; i < 100000; ++i) {
    sparse.push_back({i * 1000, 10, 1, 0});
    full.push_back({i * 1000, 1000, 1, 0});
  }
  const SliceColumns cs = SliceColumns::Build(sparse, nullptr);
  const SliceColumns cf = SliceColumns::Build(full, nullptr);
  const std::vector<float> s = QueryBusy(cs, 0, 0, 100000 * 1000, 1000);
  const std::vector<float> f = QueryBusy(cf, 0, 0, 100000 * 1000, 1000);
  ASSERT_EQ(s.size(), 1000u);
  ASSERT_EQ(f.size(), 1000u);
  for (uint32_t p = 0; p < 1000; ++p) {
    EXPECT_FLOAT_EQ(s[p], 0.01f) << p;
    EXPECT_FLOAT_EQ(f[p], 1.0f) << p;
  }
  // No depth 1; an empty window.
  EXPECT_TRUE(QueryBusy(cs, 1, 0, 1000, 10).empty());
  EXPECT_TRUE(QueryBusy(cs, 0, 10, 10, 10).empty());
}

TEST(LodTest, CounterDownsamplingMatchesBruteForce) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    CounterColumns c;
    int64_t t = 0;
    const size_t n = 1 + rng() % 3000;
    for (size_t i = 0; i < n; ++i) {
      t += static_cast<int64_t>(rng() % 1000) * (rng() % 4 == 0 ? 0 : 1);
      c.ts.push_back(t);
      c.values.push_back(
          static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000));
    }
    c.BuildIndexes();
    for (int w = 0; w < 10; ++w) {
      const uint32_t pixels = 1 + static_cast<uint32_t>(rng() % 400);
      const int64_t t0 = static_cast<int64_t>(rng() % (t + 1)) - 10;
      const int64_t t1 = t0 + 1 + static_cast<int64_t>(rng() % (t + 20));
      const CounterView view = QueryCounter(c, t0, t1, pixels);
      const PixelGrid grid(t0, t1, pixels);
      std::map<uint32_t, CounterPixel> expected;
      bool has_before = false;
      double before = 0;
      for (size_t i = 0; i < n; ++i) {
        if (c.ts[i] < t0) {
          has_before = true;
          before = c.values[i];
          continue;
        }
        if (c.ts[i] >= t1) break;
        const uint32_t p = grid.PixelOf(c.ts[i]);
        auto [it, added] = expected.try_emplace(p);
        CounterPixel& e = it->second;
        if (added) {
          e.pixel = p;
          e.min = e.max = c.values[i];
        }
        ++e.count;
        e.min = std::min(e.min, c.values[i]);
        e.max = std::max(e.max, c.values[i]);
        e.last = c.values[i];
        e.last_index = static_cast<uint32_t>(i);
      }
      EXPECT_EQ(view.has_before, has_before);
      if (has_before) {
        EXPECT_EQ(view.before, before);
      }
      ASSERT_EQ(view.pixels.size(), expected.size()) << "seed " << seed;
      size_t k = 0;
      for (const auto& [p, e] : expected) {
        const CounterPixel& g = view.pixels[k++];
        EXPECT_EQ(g.pixel, e.pixel);
        EXPECT_EQ(g.count, e.count);
        EXPECT_EQ(g.min, e.min);
        EXPECT_EQ(g.max, e.max);
        EXPECT_EQ(g.last, e.last);
        EXPECT_EQ(g.last_index, e.last_index);
      }
    }
  }
}

TEST(LodTest, QueryCostDoesNotGrowWithEventsInWindow) {
  // A million tiny slices under one parent: a 100-pixel view returns at
  // most one representative per pixel and depth, plus the wide parent.
  std::vector<Slice> slices;
  slices.push_back({0, 10'000'000, 1, 0});
  for (int64_t i = 0; i < 1'000'000; ++i) slices.push_back({i * 10, 5, 2, 1});
  const SliceColumns c = SliceColumns::Build(slices, nullptr);
  const auto got = QuerySlices(c, 0, 10'000'000, 100);
  EXPECT_LE(got.size(), 101u);
  EXPECT_GE(got.size(), 100u);
}

}  // namespace
}  // namespace podscope::viewer
