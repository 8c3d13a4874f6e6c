// Hostile files against the reader: what `podscope check` does with them
// must cost work linear in the file's size (counted as bytes run through
// the CRC) and memory bounded by it (counted as the peak of bytes
// allocated, by the allocator below).
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "damaged_files.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void* Counted(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const int64_t live =
      g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p))) +
      static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
  return p;
}

void Uncounted(void* p) {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
  std::free(p);
}

}  // namespace

void* operator new(size_t n) { return Counted(n); }
void* operator new[](size_t n) { return Counted(n); }
void operator delete(void* p) noexcept { Uncounted(p); }
void operator delete[](void* p) noexcept { Uncounted(p); }
void operator delete(void* p, size_t) noexcept { Uncounted(p); }
void operator delete[](void* p, size_t) noexcept { Uncounted(p); }
// The nothrow forms too (std::stable_sort's buffer comes from one): every
// form a delete above may free must come from Counted's malloc.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return Counted(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  try {
    return Counted(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { Uncounted(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  Uncounted(p);
}

namespace podscope::trace_format {
namespace {

using testing::DamageKind;
using testing::MakeDamagedFile;

constexpr uint64_t kMiB = 1 << 20;

// Tables cost what the file holds: a few times its bytes (a record's
// bookkeeping, a string's place in the table), never more because of what a
// count or an id claims.
constexpr uint64_t kMemoryPerFileByte = 5;

// The documented bound on the scan's CRC work: every intact record once,
// plus at most twice the file's size (and 1 MiB) on records that turn out
// damaged.
uint64_t CrcBound(uint64_t file_size) { return 3 * file_size + kMiB; }

// Bytes allocated at the peak of `fn` beyond what was live before it.
template <typename Fn>
int64_t PeakAllocated(Fn fn) {
  const int64_t before = g_live.load();
  g_peak.store(before);
  fn();
  return g_peak.load() - before;
}

// What `podscope check` does with a file: verify every record, decode every
// chunk, then read the report.
RecoveryReport Check(std::string file) {
  auto reader = TraceReader::OpenBuffer(std::move(file), "hostile.podtrace",
                                        {.verify_all = true});
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  (*reader)->ForEachChunk(1, [](size_t, std::vector<TrackEvents>&) {});
  return (*reader)->report();
}

TEST(AdversarialFiles, ResynchronisingCostsWorkLinearInTheFile) {
  for (DamageKind kind :
       {DamageKind::kHeadersToTheEnd, DamageKind::kChainedHeaders}) {
    SCOPED_TRACE(testing::DamageKindName(kind));
    const std::string file = MakeDamagedFile(kind, 256 << 10);
    RecordScanner scanner(file);
    RecordView record;
    while (scanner.Next(&record)) {
    }
    EXPECT_LE(scanner.crc_bytes(), CrcBound(file.size()));
  }
}

// A valid header, then 33 MiB of 0x01: every offset reads as the header of
// a 16 MiB record. A reader that checks each one takes hours; the test's
// timeout (tests/trace_format/CMakeLists.txt) is the hang guard.
TEST(AdversarialFiles, ARunOfOneByteAfterAValidHeaderIsCheckedInLinearWork) {
  const std::string file =
      MakeDamagedFile(DamageKind::kRepeatedByte, 33 * kMiB);
  const RecoveryReport report = Check(file);
  EXPECT_LE(report.scan_crc_bytes, CrcBound(file.size()));
  // The whole run is reported as skipped, from where the damage starts.
  ASSERT_FALSE(report.skipped.empty());
  EXPECT_EQ(report.skipped.back().offset + report.skipped.back().bytes,
            file.size());
  EXPECT_GE(report.skipped_bytes(), 33 * kMiB - 64);
  EXPECT_EQ(report.records, 1u);  // the metadata record
}

TEST(AdversarialFiles, HugeStringIdsDoNotMakeTheReaderAllocateForThem) {
  const std::string file = MakeDamagedFile(DamageKind::kHugeStringIds, kMiB);
  uint64_t strings = 0;
  const int64_t peak = PeakAllocated([&] {
    auto reader = TraceReader::OpenBuffer(file, "ids.podtrace");
    ASSERT_TRUE(reader.ok()) << reader.status();
    strings = (*reader)->string_count();
    // The strings are kept under the ids the file gives them.
    EXPECT_NE((*reader)->GetString(8 * kMiB), "<lost string>");
  });
  // The reader's own copy of the file, plus the tables.
  EXPECT_LE(peak, static_cast<int64_t>((1 + kMemoryPerFileByte) * file.size()));
  EXPECT_LE(strings, file.size());
}

TEST(AdversarialFiles, EveryKindIsCheckedInBoundedWorkAndMemory) {
  for (DamageKind kind : testing::kAllDamageKinds) {
    for (uint64_t size : {kMiB, 5 * kMiB}) {
      SCOPED_TRACE(std::string(testing::DamageKindName(kind)) + ", " +
                   std::to_string(size) + " bytes");
      std::string file = MakeDamagedFile(kind, size, size + 7);
      ASSERT_EQ(file.size(), size);
      RecoveryReport report;
      const int64_t peak =
          PeakAllocated([&] { report = Check(std::move(file)); });
      EXPECT_LE(report.scan_crc_bytes, CrcBound(size));
      EXPECT_LE(peak, static_cast<int64_t>(kMemoryPerFileByte * size));
      for (const SkippedRange& r : report.skipped) {
        EXPECT_FALSE(r.reason.empty());
        EXPECT_LE(r.offset + r.bytes, size);
      }
    }
  }
}

// `count` records of 11 bytes that are intact on disk but unusable: strings
// tables that are not valid messages, or chunks whose framing is malformed.
std::string TinyBadRecords(RecordType type, size_t count) {
  const std::string one = EncodeRecord(type, RecordEncoding::kRaw, "\xff");
  std::string out;
  out.reserve(one.size() * count);
  for (size_t i = 0; i < count; ++i) out += one;
  return out;
}

std::string IntactStrings() {
  proto::StringTable table;
  table.set_first_id(1);
  table.add_strings("kept");
  return EncodeRecord(RecordType::kStrings, RecordEncoding::kRaw,
                      table.SerializeAsString());
}

// A million unusable records in two runs: the report names each run's byte
// range once, with the first record's reason and how many records it holds,
// and costs no more than a few bytes per byte of the file.
TEST(AdversarialFiles, AMillionTinyBadRecordsAreReportedAsTheirRanges) {
  const std::string start = testing::damaged_internal::Start();
  const std::string run = TinyBadRecords(RecordType::kStrings, 500'000);
  const std::string kept = IntactStrings();
  std::string file = start + run + kept + run;
  const uint64_t size = file.size();
  RecoveryReport report;
  std::string kept_string;
  const int64_t peak = PeakAllocated([&] {
    auto reader = TraceReader::OpenBuffer(std::move(file), "tiny.podtrace",
                                          {.verify_all = true});
    ASSERT_TRUE(reader.ok()) << reader.status();
    report = (*reader)->report();
    kept_string = std::string((*reader)->GetString(1));
  });
  EXPECT_EQ(kept_string, "kept");
  ASSERT_EQ(report.skipped.size(), 2u);
  EXPECT_EQ(report.skipped[0].offset, start.size());
  EXPECT_EQ(report.skipped[0].bytes, run.size());
  EXPECT_EQ(report.skipped[1].offset, start.size() + run.size() + kept.size());
  EXPECT_EQ(report.skipped[1].bytes, run.size());
  for (const SkippedRange& r : report.skipped) {
    EXPECT_NE(r.reason.find("strings record at offset"), std::string::npos)
        << r.reason;
    EXPECT_NE(r.reason.find("499,999 more"), std::string::npos) << r.reason;
  }
  EXPECT_EQ(report.skipped_bytes(), 2 * run.size());
  EXPECT_LE(peak, static_cast<int64_t>(3 * size));
}

// Chunks are found damaged when decoded, on several threads in any order:
// a run of them is still one range, named for its first chunk.
TEST(AdversarialFiles, ARunOfBadChunksIsOneRangeWhateverTheDecodingOrder) {
  const std::string start = testing::damaged_internal::Start();
  const std::string run = TinyBadRecords(RecordType::kChunk, 100'000);
  std::string file = start + run;
  auto reader = TraceReader::OpenBuffer(std::move(file), "chunks.podtrace",
                                        {.verify_all = true});
  ASSERT_TRUE(reader.ok()) << reader.status();
  (*reader)->ForEachChunk(2, [](size_t, std::vector<TrackEvents>&) {});
  const RecoveryReport report = (*reader)->report();
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].offset, start.size());
  EXPECT_EQ(report.skipped[0].bytes, run.size());
  EXPECT_EQ(report.skipped[0].reason.rfind("chunk 0: ", 0), 0u)
      << report.skipped[0].reason;
  EXPECT_NE(report.skipped[0].reason.find("99,999 more"), std::string::npos)
      << report.skipped[0].reason;
}

// The benchmark's figure (reader.adversarial_peak_rss_ratio, at most 4 with
// the mapped file itself) at the benchmark's size: the reader's own memory
// stays under three times the file's size for every kind.
TEST(AdversarialFiles, TheReaderHoldsLessThanThreeTimesTheFile) {
  for (DamageKind kind : testing::kAllDamageKinds) {
    SCOPED_TRACE(testing::DamageKindName(kind));
    std::string file = MakeDamagedFile(kind, 33 * kMiB);
    const int64_t peak = PeakAllocated([&] { Check(std::move(file)); });
    EXPECT_LE(peak, static_cast<int64_t>(3 * 33 * kMiB));
  }
}

}  // namespace
}  // namespace podscope::trace_format
