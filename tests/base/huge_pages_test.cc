// Columns in huge-page slabs: they hold their data, aligned; slabs go back
// to the system once nothing in them is live; a freed block's memory is
// returned even while its slab lives on; threads free each other's blocks.
#include "podscope/base/huge_pages.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "podscope/base/sanitizers.h"

namespace podscope::base {
namespace {

template <typename T>
using Column = std::vector<T, HugePageAllocator<T>>;

// This process's resident memory, from /proc/self/statm.
size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int read = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return read == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

TEST(HugePages, ColumnsOfEverySizeHoldTheirValuesAligned) {
  // Below the slabs, in them, and above them.
  for (size_t n : {size_t{100}, size_t{40'000}, size_t{1'000'000},
                   size_t{3'000'000}, size_t{5'000'000}}) {
    Column<uint32_t> a(n), b(n);
    std::iota(a.begin(), a.end(), 7u);
    std::iota(b.begin(), b.end(), 1'000'000'000u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u) << n;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u) << n;
    for (size_t i = 0; i < n; i += 997) {
      ASSERT_EQ(a[i], 7u + i) << n;
      ASSERT_EQ(b[i], 1'000'000'000u + i) << n;
    }
    // Growth moves the values into a new block.
    a.resize(n + n / 2, 3u);
    EXPECT_EQ(a[n - 1], 7u + n - 1);
    EXPECT_EQ(a.back(), 3u);
  }
}

TEST(HugePages, SlabsReturnOnceNothingInThemIsLive) {
  const size_t before = HugeSlabsMapped();
  std::vector<Column<uint8_t>> kept;
  // 40 blocks of 3 MiB from a thread that then ends: four slabs or so.
  std::thread([&] {
    for (int i = 0; i < 40; ++i) kept.emplace_back(size_t{3} << 20, 1);
  }).join();
  if (PODSCOPE_ASAN) {
    EXPECT_EQ(HugeSlabsMapped(), before) << "no slabs under AddressSanitizer";
  } else {
    EXPECT_GE(HugeSlabsMapped(), before + 3);
  }
  for (const auto& c : kept) ASSERT_EQ(c[12345], 1);
  kept.clear();  // freed on this thread, not the one that allocated
  EXPECT_EQ(HugeSlabsMapped(), before);
}

TEST(HugePages, AFreedBlockGivesItsMemoryBackWhileItsSlabLives) {
  if (PODSCOPE_ASAN) GTEST_SKIP() << "no slabs under AddressSanitizer";
  Column<uint8_t> neighbour(size_t{1} << 20, 1);  // keeps the slab alive
  auto big = std::make_unique<Column<uint8_t>>(size_t{7} << 20, 2);
  const size_t with = ResidentBytes();
  big.reset();
  const size_t without = ResidentBytes();
  EXPECT_GE(with, without + (size_t{5} << 20))
      << "resident " << with << " before the free, " << without << " after";
  EXPECT_EQ(neighbour[777], 1);
}

TEST(HugePages, ThreadsFreeEachOthersBlocks) {
  const size_t before = HugeSlabsMapped();
  constexpr int kThreads = 4;
  std::vector<std::vector<Column<uint32_t>>> made(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        made[t].emplace_back(20'000 + 7'000 * i, static_cast<uint32_t>(t));
      }
    });
  }
  for (auto& t : threads) t.join();
  threads.clear();
  // Each thread frees and checks the blocks another thread made.
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto& theirs = made[(t + 1) % kThreads];
      for (auto& c : theirs) {
        ASSERT_EQ(c.front(), static_cast<uint32_t>((t + 1) % kThreads));
        ASSERT_EQ(c.back(), static_cast<uint32_t>((t + 1) % kThreads));
        Column<uint32_t>().swap(c);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(HugeSlabsMapped(), before);
}

TEST(HugePages, ReserveHugeKeepsTheValues) {
  std::vector<uint64_t> v(1000);
  std::iota(v.begin(), v.end(), 5u);
  ReserveHuge(&v, size_t{4} << 20);  // 32 MiB: advised
  EXPECT_GE(v.capacity(), size_t{4} << 20);
  ASSERT_EQ(v.size(), 1000u);
  EXPECT_EQ(v[999], 1004u);
  ResizeHuge(&v, size_t{2} << 20);
  EXPECT_EQ(v[999], 1004u);
  EXPECT_EQ(v.back(), 0u);
}

}  // namespace
}  // namespace podscope::base
