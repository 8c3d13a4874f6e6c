// What a track's columns keep of its slices' names, and what they cost.
#include "podscope/viewer/slice_columns.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "trace_gen.h"

namespace podscope::viewer {
namespace {

using trace_format::Slice;

// Every slice's name, start, duration and depth, through the index Build
// gave it.
void ExpectSameSlices(const std::vector<Slice>& slices, const SliceColumns& c,
                      const std::vector<uint32_t>& where) {
  ASSERT_EQ(c.size(), slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const Slice got = c.Get(where[i]);
    ASSERT_EQ(got.name, slices[i].name) << i;
    ASSERT_EQ(got.start_ns, slices[i].start_ns) << i;
    ASSERT_EQ(got.duration_ns, slices[i].duration_ns) << i;
  }
}

// Starts and durations take 4 bytes each; a name 1 byte in a track of at
// most 256 names, 2 in one of more; the indexes under a byte.
TEST(SliceColumns, ATrackOfRepeatedNamesTakesAboutTenBytesASlice) {
  std::mt19937_64 rng(1);
  for (const auto& [names, most] : {std::pair{200u, 10.5}, {1000u, 11.5}}) {
    SCOPED_TRACE(names);
    const std::vector<Slice> slices =
        testing::RandomNestedSlices(rng, 300000, 1'000'000'000, names);
    std::vector<uint32_t> where;
    const SliceColumns c = SliceColumns::Build(slices, &where);
    ExpectSameSlices(slices, c, where);
    const double per_slice = static_cast<double>(c.resident_bytes()) /
                             static_cast<double>(slices.size());
    EXPECT_LT(per_slice, most);
  }
}

TEST(SliceColumns, TracksOfManyNamesOrHugeIdsKeepEveryName) {
  std::mt19937_64 rng(2);
  for (const bool huge_ids : {false, true}) {
    SCOPED_TRACE(huge_ids);
    std::vector<Slice> slices = testing::RandomNestedSlices(
        rng, 200000, 1'000'000'000, huge_ids ? 1000 : 100000);
    if (huge_ids) {
      // Ids as a damaged file may hold them, past any table.
      slices[slices.size() / 2].name = 0xFFFFFFF0u;
      slices[slices.size() / 3].name = (1u << 20) + 5;
    }
    std::vector<uint32_t> where;
    const SliceColumns c = SliceColumns::Build(slices, &where);
    ExpectSameSlices(slices, c, where);
  }
}

TEST(SliceColumns, RemapRenamesEverySlice) {
  std::mt19937_64 rng(3);
  for (uint32_t names : {50u, 70000u}) {
    SCOPED_TRACE(names);
    std::vector<Slice> slices =
        testing::RandomNestedSlices(rng, 100000, 1'000'000'000, names);
    std::vector<uint32_t> where;
    SliceColumns c = SliceColumns::Build(slices, &where);
    // Ids past the end of the map become 0, as the loader's do.
    std::vector<uint32_t> remap(names / 2 + 1);
    for (uint32_t i = 0; i < remap.size(); ++i) remap[i] = 3 * i + 7;
    c.RemapNames(remap);
    for (Slice& s : slices) s.name = s.name < remap.size() ? remap[s.name] : 0;
    ExpectSameSlices(slices, c, where);
  }
}

TEST(SliceColumns, AppendingNewNamesKeepsTheOldOnes) {
  std::mt19937_64 rng(4);
  std::vector<Slice> old =
      testing::RandomNestedSlices(rng, 50000, 1'000'000'000, 80000);
  int64_t end = 0;
  for (const Slice& s : old) end = std::max(end, s.end_ns() + 1);
  std::vector<uint32_t> where_old;
  const SliceColumns c = SliceColumns::Build(old, &where_old);
  // Fresh slices whose names take the track past its table's 65,536.
  std::vector<Slice> fresh =
      testing::RandomNestedSlices(rng, 50000, 1'000'000'000, 80000);
  for (Slice& s : fresh) {
    s.start_ns += end;
    s.name += 80000;
  }
  std::vector<uint32_t> where;
  const SliceColumns grown = SliceColumns::AppendAfter(c, fresh, &where);
  ASSERT_EQ(grown.size(), old.size() + fresh.size());
  for (size_t i = 0; i < old.size(); ++i) {
    ASSERT_EQ(grown.name(where[where_old[i]]), old[i].name) << i;
  }
  for (size_t j = 0; j < fresh.size(); ++j) {
    ASSERT_EQ(grown.name(where[old.size() + j]), fresh[j].name) << j;
  }
}

}  // namespace
}  // namespace podscope::viewer
