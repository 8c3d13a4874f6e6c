// Reading damaged files: truncated at every byte, single bit flips, a
// writer that died after a Flush, garbage in the middle. The reader must
// never crash, must return every event of every intact chunk, and must
// report what it skipped.
#include <gtest/gtest.h>

#include <random>

#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "sample_trace.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

using testing::FlatEvent;

struct RecordSpan {
  uint64_t offset;
  uint64_t size;
  RecordType type;
  uint64_t end() const { return offset + size; }
};

// The sample trace and what an intact read of it gives, record by record.
class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = testing::WriteSampleTrace();
    ASSERT_FALSE(file_.empty());
    RecordScanner scanner(file_);
    RecordView record;
    while (scanner.Next(&record)) {
      records_.push_back({record.offset, record.size(), record.type});
    }
    ASSERT_TRUE(scanner.clean_end());
    auto reader = testing::OpenOrDie(file_);
    ASSERT_NE(reader, nullptr);
    ASSERT_TRUE(reader->report().intact());
    all_events_ = testing::ReadAllFlat(*reader);
    for (size_t i = 0; i < reader->chunks().size(); ++i) {
      auto decoded = reader->DecodeChunk(i);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      chunk_events_.push_back(testing::Flatten(*decoded));
      chunks_.push_back({reader->chunks()[i].offset, reader->chunks()[i].length,
                         RecordType::kChunk});
    }
    // The sample is meant to exercise several chunks and every record kind.
    ASSERT_GE(chunks_.size(), 5u);
    ASSERT_GE(records_.size(), chunks_.size() + 8);
  }

  // The events of the chunks for which `keep(chunk)` holds, sorted.
  template <typename Keep>
  std::vector<FlatEvent> EventsOfChunks(Keep keep) const {
    std::vector<FlatEvent> out;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      if (keep(chunks_[i])) {
        out.insert(out.end(), chunk_events_[i].begin(), chunk_events_[i].end());
      }
    }
    return testing::Sorted(std::move(out));
  }

  const RecordSpan* RecordAt(uint64_t offset) const {
    for (const RecordSpan& r : records_) {
      if (offset >= r.offset && offset < r.end()) return &r;
    }
    return nullptr;
  }

  std::string file_;
  std::vector<RecordSpan> records_;
  std::vector<RecordSpan> chunks_;
  std::vector<FlatEvent> all_events_;
  std::vector<std::vector<FlatEvent>> chunk_events_;
};

bool Covers(const RecoveryReport& report, uint64_t offset) {
  for (const SkippedRange& r : report.skipped) {
    if (offset >= r.offset && offset < r.offset + r.bytes) return true;
  }
  return false;
}

TEST_F(RecoveryTest, TruncatedAtEveryByte) {
  for (uint64_t cut = 0; cut < file_.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut) + " of " +
                 std::to_string(file_.size()));
    auto reader = TraceReader::OpenBuffer(file_.substr(0, cut), "cut");
    if (cut < kFileHeaderSize) {
      EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
      continue;
    }
    ASSERT_TRUE(reader.ok()) << reader.status();
    const RecoveryReport report = (*reader)->report();
    EXPECT_FALSE(report.has_index) << "a cut file has lost its trailer";
    EXPECT_FALSE(report.intact());
    EXPECT_EQ(report.file_bytes, cut);
    EXPECT_EQ(
        testing::ReadAllFlat(**reader),
        EventsOfChunks([&](const RecordSpan& c) { return c.end() <= cut; }));

    const RecordSpan* torn = RecordAt(cut);
    const bool at_boundary = torn == nullptr || torn->offset == cut;
    const RecoveryReport after = (*reader)->report();
    if (at_boundary) {
      EXPECT_TRUE(after.skipped.empty());
      continue;
    }
    ASSERT_EQ(after.skipped.size(), 1u);
    EXPECT_EQ(after.skipped[0].offset, torn->offset);
    EXPECT_EQ(after.skipped[0].bytes, cut - torn->offset);
    EXPECT_NE(after.skipped[0].reason.find("torn"), std::string::npos)
        << after.skipped[0].reason;
    EXPECT_EQ(after.skipped_bytes(), cut - torn->offset);
  }
}

TEST_F(RecoveryTest, SingleBitFlipsAreCaughtAndContained) {
  std::mt19937 rng(20240607);
  std::uniform_int_distribution<uint64_t> position(kFileHeaderSize,
                                                   file_.size() - 1);
  for (int flip = 0; flip < 2000; ++flip) {
    const uint64_t offset = position(rng);
    const int bit = static_cast<int>(rng() % 8);
    SCOPED_TRACE("bit " + std::to_string(bit) + " of byte " +
                 std::to_string(offset));
    std::string damaged = file_;
    damaged[offset] = static_cast<char>(damaged[offset] ^ (1 << bit));
    const RecordSpan* hit = RecordAt(offset);
    ASSERT_NE(hit, nullptr);
    const std::vector<FlatEvent> expected =
        hit->type == RecordType::kChunk
            ? EventsOfChunks(
                  [&](const RecordSpan& c) { return c.offset != hit->offset; })
            : all_events_;
    for (bool verify_all : {false, true}) {
      auto reader = TraceReader::OpenBuffer(damaged, "flipped",
                                            {.verify_all = verify_all});
      ASSERT_TRUE(reader.ok()) << reader.status();
      EXPECT_EQ(testing::ReadAllFlat(**reader), expected)
          << "verify_all " << verify_all << ", record type "
          << static_cast<int>(hit->type);
      const RecoveryReport report = (*reader)->report();
      EXPECT_TRUE(Covers(report, offset))
          << "the damaged record is reported (verify_all " << verify_all << ")";
      EXPECT_FALSE(report.intact());
    }
    if (HasFailure()) return;
  }
}

TEST_F(RecoveryTest, UnclosedFileReadsCompletely) {
  const std::string unclosed = testing::WriteSampleTrace({.close = false});
  ASSERT_LT(unclosed.size(), file_.size());
  EXPECT_EQ(unclosed, file_.substr(0, unclosed.size()))
      << "closing only appends the index and the trailer";
  auto reader = testing::OpenOrDie(unclosed);
  const RecoveryReport report = reader->report();
  EXPECT_FALSE(report.has_index);
  EXPECT_FALSE(report.index_used);
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_TRUE(report.index_problem.empty()) << report.index_problem;
  EXPECT_EQ(testing::ReadAllFlat(*reader), all_events_);
  EXPECT_TRUE(reader->report().skipped.empty());
  auto closed = testing::OpenOrDie(file_);
  EXPECT_EQ(reader->metadata().SerializeAsString(),
            closed->metadata().SerializeAsString());
  EXPECT_EQ(reader->metadata().process_index(), 1) << "the later record";
  EXPECT_EQ(reader->tracks().size(), closed->tracks().size());
  EXPECT_EQ(reader->string_count(), closed->string_count());
  EXPECT_EQ(reader->total_dropped(), 5u);
  EXPECT_EQ(reader->clock().offsets_size(), 2);
  EXPECT_EQ(reader->chunks().size(), chunks_.size());
}

TEST_F(RecoveryTest, DamagedIndexFallsBackToScanning) {
  const auto index = std::find_if(
      records_.begin(), records_.end(),
      [](const RecordSpan& r) { return r.type == RecordType::kIndex; });
  ASSERT_NE(index, records_.end());
  std::string damaged = file_;
  damaged[index->offset + kRecordHeaderSize + 3] ^= 0x40;
  auto reader = testing::OpenOrDie(damaged);
  const RecoveryReport report = reader->report();
  EXPECT_FALSE(report.index_used);
  EXPECT_FALSE(report.index_problem.empty());
  EXPECT_TRUE(Covers(report, index->offset));
  EXPECT_EQ(testing::ReadAllFlat(*reader), all_events_);
}

TEST_F(RecoveryTest, ResynchronisesAfterOverwrittenBytes) {
  // Garbage over the end of one chunk and the start of the next record.
  const RecordSpan& victim = chunks_[2];
  const uint64_t from = victim.end() - 5;
  std::string damaged = file_;
  for (uint64_t i = from; i < victim.end() + 4; ++i) damaged[i] = '\xA5';
  const RecordSpan* next = RecordAt(victim.end());
  ASSERT_NE(next, nullptr);
  const RecordSpan* resync = RecordAt(next->end());
  ASSERT_NE(resync, nullptr);

  for (bool verify_all : {false, true}) {
    SCOPED_TRACE(verify_all ? "verify_all" : "through the index");
    auto reader = testing::OpenOrDie(damaged, {.verify_all = verify_all});
    const std::vector<FlatEvent> expected =
        EventsOfChunks([&](const RecordSpan& c) {
          return c.offset != victim.offset && c.offset != next->offset;
        });
    EXPECT_EQ(testing::ReadAllFlat(*reader), expected);
    const RecoveryReport report = reader->report();
    EXPECT_TRUE(Covers(report, victim.offset));
    EXPECT_TRUE(Covers(report, next->offset));
    EXPECT_FALSE(Covers(report, resync->offset))
        << "the record after the damage is read";
    if (verify_all) {
      ASSERT_EQ(report.skipped.size(), 1u);
      EXPECT_EQ(report.skipped[0].offset, victim.offset);
      EXPECT_EQ(report.skipped[0].bytes, resync->offset - victim.offset);
      EXPECT_EQ(report.skipped[0].reason, "CRC mismatch");
      // Dictionaries written after the damage are recovered too.
      EXPECT_EQ(reader->metadata().process_index(), 1);
      EXPECT_EQ(reader->total_dropped(), 5u);
    }
  }
}

TEST_F(RecoveryTest, ResynchronisesAfterInsertedGarbage) {
  const uint64_t at = chunks_[1].offset;
  std::string garbage(37, '\0');
  std::mt19937 rng(7);
  for (char& c : garbage) c = static_cast<char>(rng());
  // An unclosed file: the index's offsets would be wrong after the insert.
  std::string damaged = testing::WriteSampleTrace({.close = false});
  damaged.insert(at, garbage);
  auto reader = testing::OpenOrDie(damaged);
  EXPECT_EQ(testing::ReadAllFlat(*reader), all_events_);
  const RecoveryReport report = reader->report();
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].offset, at);
  EXPECT_EQ(report.skipped[0].bytes, garbage.size());
  EXPECT_EQ(report.skipped_bytes(), garbage.size());
}

TEST_F(RecoveryTest, DescribeSaysWhatHappenedInOneWording) {
  EXPECT_EQ(testing::OpenOrDie(file_)->report().Describe(), "intact");

  const std::string unclosed = testing::WriteSampleTrace({.close = false});
  EXPECT_EQ(testing::OpenOrDie(unclosed)->report().Describe(),
            "not closed: no index, read by scanning");

  // 37 bytes of garbage in an unclosed file.
  std::string garbage(37, '\0');
  std::mt19937 rng(11);
  for (char& c : garbage) c = static_cast<char>(rng());
  std::string damaged = unclosed;
  damaged.insert(chunks_[1].offset, garbage);
  RecoveryReport report = testing::OpenOrDie(damaged)->report();
  report.file_bytes = 3 * 1024 * 1024;  // to show the larger units
  EXPECT_EQ(report.Describe(),
            "not closed: no index, read by scanning; 37 bytes skipped in 1 "
            "damaged range (of 3.00 MiB)");
  report.skipped.push_back({0, 4000, "CRC mismatch"});
  EXPECT_EQ(report.Describe(),
            "not closed: no index, read by scanning; 4,037 bytes skipped in "
            "2 damaged ranges (3.94 KiB of 3.00 MiB)");

  RecoveryReport bad_index;
  bad_index.has_index = true;
  bad_index.index_problem = "the trailer does not point at an index record";
  bad_index.file_bytes = 100;
  bad_index.skipped.push_back({50, 10, "CRC mismatch"});
  EXPECT_EQ(bad_index.Describe(),
            "index unusable (the trailer does not point at an index record), "
            "read by scanning; 10 bytes skipped in 1 damaged range (of 100 B)");
}

TEST_F(RecoveryTest, GarbageAfterTheHeaderOnly) {
  std::string damaged =
      file_.substr(0, kFileHeaderSize) + std::string(100, 'z');
  auto reader = testing::OpenOrDie(damaged);
  EXPECT_TRUE(reader->ReadAllTracks().empty());
  const RecoveryReport report = reader->report();
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].offset, kFileHeaderSize);
  EXPECT_EQ(report.skipped[0].bytes, 100u);
  EXPECT_FALSE(report.skipped[0].reason.empty());
  EXPECT_EQ(reader->GetString(3).find("lost") != std::string_view::npos, true);
}

TEST_F(RecoveryTest, UncompressedRecordsReadTheSame) {
  const std::string raw = testing::ReframeUncompressed(file_);
  ASSERT_GT(raw.size(), file_.size());
  for (bool verify_all : {false, true}) {
    auto reader = testing::OpenOrDie(raw, {.verify_all = verify_all});
    EXPECT_TRUE(reader->report().intact());
    EXPECT_EQ(reader->report().index_used, !verify_all);
    EXPECT_EQ(testing::ReadAllFlat(*reader), all_events_);
  }
}

// A record can be intact on disk (its CRC matches) and still make no sense:
// written by a buggy or hostile program. Such a record is reported and
// skipped, quickly and without allocating what it claims.
std::string FileWithRecord(RecordType type, RecordEncoding encoding,
                           const std::string& payload) {
  return EncodeFileHeader() + EncodeRecord(type, encoding, payload);
}

// A string with an id far beyond the strings the file holds is kept under
// that id without a table slot for every id below it; ids past 32 bits
// cannot be referred to, and their record is reported.
TEST(ImplausibleRecords, HugeStringIdsAreKeptWithoutATableForThem) {
  proto::StringTable table;
  table.set_first_id((1u << 31) - 2);
  table.add_strings("x");
  auto reader = testing::OpenOrDie(FileWithRecord(
      RecordType::kStrings, RecordEncoding::kRaw, table.SerializeAsString()));
  EXPECT_TRUE(reader->report().skipped.empty());
  EXPECT_EQ(reader->GetString((1u << 31) - 2), "x");
  EXPECT_NE(reader->GetString((1u << 31) - 3).find("lost"), std::string::npos);
  EXPECT_LT(reader->string_count(), 1000u);

  table.set_first_id(0xFFFFFFFFu);
  table.add_strings("y");
  reader = testing::OpenOrDie(FileWithRecord(
      RecordType::kStrings, RecordEncoding::kRaw, table.SerializeAsString()));
  const RecoveryReport report = reader->report();
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].offset, kFileHeaderSize);
  EXPECT_NE(report.skipped[0].reason.find("32 bits"), std::string::npos)
      << report.skipped[0].reason;
}

TEST(ImplausibleRecords, CompressedSizeClaimBeyondDeflatesReachIsSkipped) {
  std::string payload(4, '\0');
  const uint32_t claim = 1u << 30;  // 1 GiB from a 2-byte deflate stream
  for (int i = 0; i < 4; ++i) payload[i] = static_cast<char>(claim >> (8 * i));
  payload += std::string("\x03\x00", 2);  // an empty final block
  auto reader = testing::OpenOrDie(
      FileWithRecord(RecordType::kChunk, RecordEncoding::kZlib, payload));
  ASSERT_EQ(reader->chunks().size(), 1u);
  auto decoded = reader->DecodeChunk(0);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(decoded.status().message()).find("claims"),
            std::string::npos)
      << decoded.status();
  const RecoveryReport report = reader->report();
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].offset, kFileHeaderSize);
}

// Times near the ends of int64 (damage, or a broken clock) must not be
// undefined behaviour anywhere on the read path; the UBSan build checks.
TEST(ImplausibleRecords, ExtremeTimesAreNotUndefinedBehaviour) {
  proto::Chunk chunk;
  proto::TrackEvents* flat = chunk.add_tracks();
  flat->set_track_id(1);
  for (int i = 0; i < 3; ++i) flat->add_slice_name(1);
  flat->add_slice_start_delta(std::numeric_limits<int64_t>::max() - 5);
  flat->add_slice_start_delta(-3);
  flat->add_slice_start_delta(std::numeric_limits<int64_t>::min());
  flat->add_slice_duration(100);
  flat->add_slice_duration(uint64_t{1} << 63);
  flat->add_slice_duration(~uint64_t{0});
  proto::TrackEvents* nested = chunk.add_tracks();
  nested->set_track_id(2);
  nested->add_slice_name(1);
  nested->add_slice_pops(0);
  nested->add_slice_boundary_delta(uint64_t{1} << 62);
  nested->add_slice_boundary_delta(~uint64_t{0} - 7);
  auto reader = testing::OpenOrDie(FileWithRecord(
      RecordType::kChunk, RecordEncoding::kRaw, chunk.SerializeAsString()));
  const std::vector<TrackEvents> tracks = reader->ReadAllTracks(1);
  size_t slices = 0;
  for (const TrackEvents& t : tracks) slices += t.slices.size();
  EXPECT_EQ(slices, 4u);
  for (uint32_t track : {1u, 2u}) {
    reader->ReadTrack(track, 0, std::numeric_limits<int64_t>::max());
    reader->ReadTrack(track, std::numeric_limits<int64_t>::min(), -1);
  }
}

TEST(ImplausibleRecords, ChunkThatIsNotAChunkIsSkipped) {
  auto reader = testing::OpenOrDie(FileWithRecord(
      RecordType::kChunk, RecordEncoding::kRaw, "\xFF\xFF\xFF garbage"));
  EXPECT_TRUE(reader->ReadAllTracks().empty());
  ASSERT_EQ(reader->report().skipped.size(), 1u);
  EXPECT_NE(reader->report().skipped[0].reason.find("chunk 0"),
            std::string::npos);
}

}  // namespace
}  // namespace podscope::trace_format
