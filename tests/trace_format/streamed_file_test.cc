// StreamedFile: a trace file that arrives over the network in pieces, as a
// remote capture delivers it.
#include "podscope/trace_format/streamed_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "gtest/gtest.h"
#include "podscope/trace_format/clock_model.h"
#include "podscope/trace_format/reader.h"
#include "sample_trace.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

using testing::OpenOrDie;
using testing::ReadAllFlat;
using testing::WriteSampleTrace;

std::string TempPath(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("podscope-streamed-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

proto::ClockRecord Offsets() {
  proto::ClockRecord c;
  for (int64_t t : {1000, 900'000'000}) {
    proto::ClockOffset* o = c.add_offsets();
    o->set_local_monotonic_ns(t);
    o->set_offset_ns(5'000'000'000 + t / 10'000);
    o->set_uncertainty_ns(20'000);
    o->set_reference("test client");
  }
  return c;
}

TEST(StreamedFile, PiecesOfAnyLengthMakeTheSameTraceWithTheAddedRecord) {
  const std::string original = WriteSampleTrace();
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const std::string path = TempPath("pieces.podtrace");
    auto file = StreamedFile::Create(path);
    ASSERT_TRUE(file.ok());
    size_t pos = 0;
    while (pos < original.size()) {
      const size_t n = std::min<size_t>(original.size() - pos, 1 + rng() % 300);
      ASSERT_TRUE(
          (*file)->Append(std::string_view(original).substr(pos, n)).ok());
      pos += n;
    }
    EXPECT_TRUE((*file)->complete());
    ASSERT_TRUE((*file)->AddRecord(RecordType::kClock, Offsets()).ok());
    ASSERT_TRUE((*file)->Finish().ok());

    const std::string written = ReadFile(path);
    auto via_index = OpenOrDie(written);
    ASSERT_NE(via_index, nullptr);
    EXPECT_TRUE(via_index->report().has_index);
    EXPECT_TRUE(via_index->report().skipped.empty());
    EXPECT_TRUE(via_index->report().index_problem.empty())
        << via_index->report().index_problem;
    // The added offsets are found through the rewritten index.
    auto reference = OpenOrDie(original);
    const int offsets = reference->clock().offsets_size() + 2;
    EXPECT_EQ(via_index->clock().offsets_size(), offsets);
    EXPECT_TRUE(ClockModel(via_index->clock()).has_reference());
    EXPECT_EQ(ReadAllFlat(*via_index), ReadAllFlat(*reference));
    auto scanned = OpenOrDie(written, {.verify_all = true});
    EXPECT_EQ(scanned->clock().offsets_size(), offsets);
  }
}

// A sender that ends the stream on purpose before its own file is closed
// (a process that goes on tracing itself) sends no index: the receiver
// builds one that matches what the writer's own index says.
TEST(StreamedFile, TheReceiverBuildsTheIndexOfAStreamThatHasNone) {
  const std::string original = WriteSampleTrace();
  uint64_t index_offset = 0;
  for (int i = 7; i >= 0; --i) {
    index_offset = (index_offset << 8) |
                   static_cast<uint8_t>(original[original.size() - 8 + i]);
  }
  ASSERT_LT(index_offset, original.size());
  auto reference = OpenOrDie(original);
  ASSERT_NE(reference, nullptr);
  ASSERT_GT(reference->chunks().size(), 1u);
  // Whole records only, and the same with a torn record at the end.
  for (size_t torn : {size_t{0}, size_t{5}}) {
    const std::string path = TempPath("built-index.podtrace");
    auto file = StreamedFile::Create(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)
                    ->Append(std::string_view(original).substr(0, index_offset))
                    .ok());
    if (torn > 0) {
      ASSERT_TRUE(
          (*file)
              ->Append(std::string_view(original).substr(index_offset, torn))
              .ok());
    }
    EXPECT_FALSE((*file)->complete());
    ASSERT_TRUE((*file)->AddRecord(RecordType::kClock, Offsets()).ok());
    ASSERT_TRUE((*file)->Finish(/*build_index=*/true).ok());
    EXPECT_TRUE((*file)->complete());

    auto built = OpenOrDie(ReadFile(path));
    ASSERT_NE(built, nullptr);
    EXPECT_TRUE(built->report().intact()) << built->report().index_problem;
    EXPECT_TRUE(built->report().index_used);
    EXPECT_EQ(built->clock().offsets_size(),
              reference->clock().offsets_size() + 2);
    EXPECT_EQ(built->known_event_count(), reference->known_event_count());
    EXPECT_EQ(ReadAllFlat(*built), ReadAllFlat(*reference));
    // Chunk by chunk, the same entries as the writer's index.
    ASSERT_EQ(built->chunks().size(), reference->chunks().size());
    for (size_t i = 0; i < built->chunks().size(); ++i) {
      const ChunkInfo& a = built->chunks()[i];
      const ChunkInfo& b = reference->chunks()[i];
      EXPECT_EQ(a.offset, b.offset);
      EXPECT_EQ(a.length, b.length);
      EXPECT_EQ(a.min_ns, b.min_ns) << "chunk " << i;
      EXPECT_EQ(a.max_ns, b.max_ns) << "chunk " << i;
      EXPECT_EQ(a.event_count, b.event_count) << "chunk " << i;
      ASSERT_EQ(a.tracks.size(), b.tracks.size()) << "chunk " << i;
    }
    // Time-range reads through the built index find what a scan finds.
    for (const proto::Track& t : reference->tracks()) {
      const TrackEvents x = built->ReadTrack(t.id(), 1'000, 50'000'000);
      const TrackEvents y = reference->ReadTrack(t.id(), 1'000, 50'000'000);
      EXPECT_EQ(x.event_count(), y.event_count()) << "track " << t.id();
    }
  }
}

// A chunk that arrives intact on the wire (its CRC matches) but does not
// decode must not vanish from a file that then reads as whole.
TEST(StreamedFile, ABuiltIndexDoesNotHideAChunkThatDoesNotDecode) {
  std::string original = WriteSampleTrace();
  uint64_t index_offset = 0;
  for (int i = 7; i >= 0; --i) {
    index_offset = (index_offset << 8) |
                   static_cast<uint8_t>(original[original.size() - 8 + i]);
  }
  auto reference = OpenOrDie(original);
  ASSERT_NE(reference, nullptr);
  ASSERT_GT(reference->chunks().size(), 2u);
  const ChunkInfo chunk = reference->chunks()[1];
  // Garbage for the chunk's payload, framed again with a matching CRC.
  auto record = ReadRecordAt(original, chunk.offset);
  ASSERT_TRUE(record.ok()) << record.status();
  std::string payload(record->payload);
  for (size_t i = 4; i < payload.size(); ++i) payload[i] = '\x5a';
  const std::string reframed =
      EncodeRecord(RecordType::kChunk, record->encoding, payload);
  ASSERT_EQ(reframed.size(), chunk.length);
  original.replace(chunk.offset, chunk.length, reframed);

  const std::string path = TempPath("undecodable-chunk.podtrace");
  auto file = StreamedFile::Create(path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(
      (*file)->Append(std::string_view(original).substr(0, index_offset)).ok());
  ASSERT_TRUE((*file)->AddRecord(RecordType::kClock, Offsets()).ok());
  ASSERT_TRUE((*file)->Finish(/*build_index=*/true).ok());
  ASSERT_EQ((*file)->damage().size(), 1u);
  EXPECT_EQ((*file)->damage()[0].offset, chunk.offset);
  EXPECT_FALSE((*file)->complete());

  // Every reader sees the file as damaged, and where.
  auto reader = OpenOrDie(ReadFile(path));
  ASSERT_NE(reader, nullptr);
  const size_t events = ReadAllFlat(*reader).size();
  EXPECT_LT(events, ReadAllFlat(*reference).size());
  const RecoveryReport report = reader->report();
  EXPECT_FALSE(report.intact());
  bool covered = false;
  for (const SkippedRange& r : report.skipped) {
    covered |= r.offset <= chunk.offset && chunk.offset < r.offset + r.bytes;
  }
  EXPECT_TRUE(covered) << report.Describe();
}

TEST(StreamedFile, AStreamCutAnywhereLeavesAReadableFile) {
  const std::string original = WriteSampleTrace();
  auto reference = OpenOrDie(original);
  const size_t all = ReadAllFlat(*reference).size();
  for (size_t cut = kFileHeaderSize; cut < original.size(); cut += 97) {
    const std::string path = TempPath("cut.podtrace");
    auto file = StreamedFile::Create(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(
        (*file)->Append(std::string_view(original).substr(0, cut)).ok());
    // Complete once the index has arrived (the trailer is rebuilt).
    const bool complete = (*file)->complete();
    ASSERT_TRUE((*file)->AddRecord(RecordType::kClock, Offsets()).ok());
    ASSERT_TRUE((*file)->Finish().ok());
    const std::string written = ReadFile(path);
    auto reader = TraceReader::OpenBuffer(written, "cut");
    ASSERT_TRUE(reader.ok()) << "cut at " << cut << ": " << reader.status();
    EXPECT_EQ((*reader)->report().has_index, complete) << "cut at " << cut;
    // A torn last record is dropped, not written: nothing is skipped.
    EXPECT_TRUE((*reader)->report().skipped.empty()) << "cut at " << cut;
    EXPECT_LE(ReadAllFlat(**reader).size(), all);
    EXPECT_GE((*reader)->clock().offsets_size(), 2);
  }
}

TEST(StreamedFile, BadStreamsAreClearErrors) {
  {
    auto file = StreamedFile::Create(TempPath("bad-header.podtrace"));
    ASSERT_TRUE(file.ok());
    const absl::Status s = (*file)->Append("this is not a podscope trace file");
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("capture stream"), std::string::npos) << s;
    EXPECT_FALSE((*file)->Append("more").ok());  // the error sticks
  }
  {
    auto file = StreamedFile::Create(TempPath("bad-length.podtrace"));
    ASSERT_TRUE(file.ok());
    std::string bytes = WriteSampleTrace().substr(0, kFileHeaderSize);
    bytes += std::string("\xff\xff\xff\xff", 4) + std::string(6, '\0');
    const absl::Status s = (*file)->Append(bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("impossible record length"), std::string::npos);
  }
  {
    auto file = StreamedFile::Create(TempPath("nothing.podtrace"));
    ASSERT_TRUE(file.ok());
    EXPECT_EQ((*file)->AddRecord(RecordType::kClock, Offsets()).code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_FALSE(StreamedFile::Create("/nonexistent-dir/x.podtrace").ok());
}

// A capture counts a file as kept only once it is on disk: Finish with
// `sync` reports a file whose data cannot be synced (here /dev/null, which
// refuses fdatasync) instead of claiming success.
TEST(StreamedFile, FinishWithSyncReportsAFileThatCannotBeSynced) {
  const std::string original = WriteSampleTrace();
  for (bool sync : {false, true}) {
    const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    auto file = StreamedFile::Adopt(fd, "/dev/null");
    ASSERT_TRUE(file->Append(original).ok());
    const absl::Status s = file->Finish(/*build_index=*/false, sync);
    if (!sync) {
      EXPECT_TRUE(s.ok()) << s;
      continue;
    }
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("fdatasync /dev/null"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace podscope::trace_format
