// StableSortNearlySorted: the order and stability of std::stable_sort on
// inputs near and far from sorted, and few moves on nearly sorted ones.
#include "podscope/base/sorting.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

// A key and its original position: equal keys must keep their order.
using Item = std::pair<int, int>;
bool ByKey(const Item& a, const Item& b) { return a.first < b.first; }

std::vector<Item> Numbered(const std::vector<int>& keys) {
  std::vector<Item> v;
  for (size_t i = 0; i < keys.size(); ++i) {
    v.emplace_back(keys[i], static_cast<int>(i));
  }
  return v;
}

void ExpectSameAsStableSort(const std::vector<int>& keys) {
  std::vector<Item> got = Numbered(keys), want = got;
  StableSortNearlySorted(got, ByKey);
  std::stable_sort(want.begin(), want.end(), ByKey);
  EXPECT_EQ(got, want);
}

TEST(StableSortNearlySorted, EdgeSizes) {
  ExpectSameAsStableSort({});
  ExpectSameAsStableSort({3});
  ExpectSameAsStableSort({2, 1});
  ExpectSameAsStableSort({1, 1, 1});
}

TEST(StableSortNearlySorted, KeepsEqualKeysInOrder) {
  ExpectSameAsStableSort({5, 1, 5, 0, 1, 5, 0, 0, 2, 1});
}

TEST(StableSortNearlySorted, ParentsAheadOfTheirChildren) {
  // The shape the trace writer sorts: runs in order, with now and then an
  // element that belongs a few places earlier.
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<int> keys;
    for (int i = 0; i < 300; ++i) keys.push_back(i);
    for (int i = 0; i < 40; ++i) {
      const size_t at = rng() % keys.size();
      const size_t back = std::min<size_t>(at, rng() % 9);
      std::rotate(keys.begin() + static_cast<long>(at - back),
                  keys.begin() + static_cast<long>(at),
                  keys.begin() + static_cast<long>(at) + 1);
    }
    ExpectSameAsStableSort(keys);
  }
}

TEST(StableSortNearlySorted, FarFromSortedStillSorts) {
  std::mt19937 rng(11);
  for (int n : {10, 100, 1000, 5000}) {
    std::vector<int> reversed, random;
    for (int i = 0; i < n; ++i) {
      reversed.push_back(n - i);
      random.push_back(static_cast<int>(rng() % 50));
    }
    ExpectSameAsStableSort(reversed);
    ExpectSameAsStableSort(random);
  }
}

TEST(StableSortNearlySorted, FewComparisonsWhenNearlySorted) {
  std::vector<int> keys;
  for (int i = 0; i < 10000; ++i) keys.push_back(i);
  std::swap(keys[100], keys[101]);
  std::swap(keys[5000], keys[5003]);
  std::vector<Item> v = Numbered(keys);
  size_t comparisons = 0;
  StableSortNearlySorted(v, [&](const Item& a, const Item& b) {
    ++comparisons;
    return a.first < b.first;
  });
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end(), ByKey));
  EXPECT_LT(comparisons, 10000u + 20u);
}

}  // namespace
}  // namespace podscope::base
