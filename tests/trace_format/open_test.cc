// Opening files: the header checks (version, magic, size), files on disk,
// and OpenTraces over a capture folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "podscope/trace_format/format.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/writer.h"
#include "sample_trace.h"
#include "test_util.h"

namespace podscope::trace_format {
namespace {

namespace fs = std::filesystem;

// absl::string_view is not std::string_view in Debian's abseil.
bool Contains(absl::string_view haystack, std::string_view needle) {
  return std::string_view(haystack.data(), haystack.size()).find(needle) !=
         std::string_view::npos;
}

// A fresh folder under the test temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::path(::testing::TempDir()) /
            (std::string("podscope_") + info->name() + "_" +
             std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

TEST(Open, NewerMajorVersionIsRefusedWithUpgradeAdvice) {
  std::string data = testing::WriteSampleTrace();
  data[8] = static_cast<char>(kMajorVersion + 1);  // major, little-endian
  data[9] = 0;
  data[10] = 4;  // minor
  auto reader = TraceReader::OpenBuffer(data, "future.podtrace");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(reader.status().message());
  EXPECT_TRUE(Contains(message, "future.podtrace")) << message;
  EXPECT_TRUE(Contains(message, std::to_string(kMajorVersion + 1) + ".4"))
      << message;
  EXPECT_TRUE(Contains(message, "upgrade")) << message;
}

TEST(Open, NewerMinorVersionIsRead) {
  std::string data = testing::WriteSampleTrace();
  data[10] = static_cast<char>(kMinorVersion + 1);
  auto reader = TraceReader::OpenBuffer(data, "minor.podtrace");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_FALSE((*reader)->ReadAllTracks().empty());
}

TEST(Open, BadMagicIsInvalidArgument) {
  std::string data = testing::WriteSampleTrace();
  data[1] = 'Q';
  auto reader = TraceReader::OpenBuffer(data, "x.json");
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(reader.status().message(), "x.json"));
  EXPECT_TRUE(Contains(reader.status().message(), "not a Podscope trace"));
}

TEST(Open, VersionZeroIsInvalidArgument) {
  std::string data = testing::WriteSampleTrace();
  data[8] = data[9] = 0;
  EXPECT_EQ(TraceReader::OpenBuffer(data, "zero").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Open, TooShortIsDataLoss) {
  for (size_t size : {size_t{0}, size_t{1}, kFileHeaderSize - 1}) {
    auto reader = TraceReader::OpenBuffer(
        testing::WriteSampleTrace().substr(0, size), "short.podtrace");
    ASSERT_FALSE(reader.ok());
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(Contains(reader.status().message(), "short.podtrace"));
    EXPECT_TRUE(Contains(reader.status().message(), "too short"));
  }
}

TEST(Open, HeaderOnlyFileIsEmptyNotAnError) {
  auto reader = testing::OpenOrDie(EncodeFileHeader());
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->ReadAllTracks().empty());
  EXPECT_TRUE(reader->report().skipped.empty());
  EXPECT_FALSE(reader->report().has_index);
}

TEST(Open, FileOnDiskThroughTheWriterAndTheReader) {
  TempDir dir;
  const std::string path = (dir.path() / "host.1.podtrace").string();
  {
    auto w = TraceWriter::Create(path);
    ASSERT_TRUE(w.ok()) << w.status();
    proto::Track t;
    t.set_name("main");
    const uint32_t track = (*w)->AddTrack(t);
    (*w)->AddSlice(track, 5, 10, (*w)->InternString("work"));
    ASSERT_TRUE((*w)->Flush().ok());
    // A flushed record is on disk before Close: another process sees it.
    auto early = TraceReader::Open(path);
    ASSERT_TRUE(early.ok()) << early.status();
    EXPECT_EQ((*early)->ReadTrack(track).slices.size(), 1u);
    EXPECT_FALSE((*early)->report().has_index);
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto reader = TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->name(), path);
  EXPECT_TRUE((*reader)->report().intact());
  EXPECT_EQ((*reader)->report().file_bytes, fs::file_size(path));
  EXPECT_EQ((*reader)->ReadAllTracks().size(), 1u);
}

TEST(Open, MissingFileAndFolderAreNotFound) {
  TempDir dir;
  const std::string missing = (dir.path() / "nope.podtrace").string();
  auto reader = TraceReader::Open(missing);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(reader.status().message(), missing));
  EXPECT_EQ(TraceReader::Open(dir.path().string()).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "a folder is not a trace file";
  auto traces = OpenTraces(missing);
  EXPECT_EQ(traces.status().code(), absl::StatusCode::kNotFound);
  auto empty = OpenTraces(dir.path().string());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(empty.status().message(), ".podtrace"));
}

TEST(Open, EmptyFileOnDiskIsDataLoss) {
  TempDir dir;
  const fs::path path = dir.path() / "empty.podtrace";
  WriteFile(path, "");
  EXPECT_EQ(TraceReader::Open(path.string()).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(OpenTraces, GoodFilesOpenAndBadOnesAreNamed) {
  TempDir dir;
  const fs::path session = dir.path() / "session-1";
  fs::create_directories(session / "nested");
  const fs::path good = session / "a.1.podtrace";
  const fs::path nested = session / "nested" / "c.3.podtrace";
  const fs::path bad = session / "b.2.podtrace";
  WriteFile(good, testing::WriteSampleTrace());
  WriteFile(nested, testing::WriteSampleTrace({.close = false}));
  WriteFile(bad, "this is not a trace, just some text\n");
  WriteFile(session / "notes.txt", "ignored: not a .podtrace");

  auto opened = OpenTraces(session.string());
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ(opened->readers.size(), 2u);
  EXPECT_EQ(opened->readers[0]->name(), good.string()) << "sorted by path";
  EXPECT_EQ(opened->readers[1]->name(), nested.string());
  EXPECT_TRUE(opened->readers[0]->report().intact());
  EXPECT_FALSE(opened->readers[1]->report().has_index);
  ASSERT_EQ(opened->failures.size(), 1u);
  EXPECT_EQ(opened->failures[0].first, bad.string());
  const absl::Status& s = opened->failures[0].second;
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(s.message(), bad.string())) << s;

  // A single file works too.
  auto single = OpenTraces(good.string());
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->readers.size(), 1u);
  EXPECT_TRUE(single->failures.empty());
}

}  // namespace
}  // namespace podscope::trace_format
