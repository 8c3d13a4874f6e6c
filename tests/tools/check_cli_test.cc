// `podscope check` on intact, recovered and unreadable files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>

#include "podscope/trace_format/reader.h"
#include "run_podscope.h"
#include "text_format.h"
#include "trace_fixtures.h"

namespace podscope::tools::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CheckCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("check"); }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }

  // Runs `check --json` and parses the array it prints.
  simdjson::dom::array CheckJson(const std::vector<std::string>& files,
                                 int expected_exit) {
    std::vector<std::string> args = {"check", "--json"};
    args.insert(args.end(), files.begin(), files.end());
    const RunResult r = RunPodscope(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.out << r.err;
    json_ = r.out;
    simdjson::dom::array array;
    EXPECT_EQ(parser_.parse(json_).get(array), simdjson::SUCCESS) << json_;
    return array;
  }

  fs::path dir_;
  simdjson::dom::parser parser_;
  std::string json_;
};

TEST_F(CheckCli, IntactFileExitsZero) {
  WriteCapture(dir_);
  const std::string file = Path("host-a.100.podtrace");
  const RunResult r = RunPodscope({"check", file});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(file + ": intact"));
  EXPECT_THAT(r.out, HasSubstr("23 events"));
  EXPECT_THAT(r.out, HasSubstr("3 tracks"));
  EXPECT_EQ(r.err, "");

  auto reader = trace_format::TraceReader::Open(file);
  ASSERT_TRUE(reader.ok());
  simdjson::dom::array files = CheckJson({file}, 0);
  ASSERT_EQ(files.size(), 1u);
  simdjson::dom::element f = files.at(0);
  EXPECT_EQ(std::string_view(f["path"]), file);
  EXPECT_EQ(std::string_view(f["status"]), "intact");
  EXPECT_EQ(uint64_t(f["events"]), Capture::kEventsA);
  EXPECT_EQ(uint64_t(f["chunks"]), (*reader)->chunks().size());
  EXPECT_EQ(uint64_t(f["tracks"]), 3u);
  EXPECT_TRUE(bool(f["has_index"]));
  EXPECT_EQ(uint64_t(f["skipped_bytes"]), 0u);
  EXPECT_EQ(simdjson::dom::array(f["skipped"]).size(), 0u);
  EXPECT_TRUE(f["error"].is_null());
}

TEST_F(CheckCli, TruncatedFileIsRecoveredWithWhatWasSkipped) {
  const ChunkedFile info = WriteTorn(Path("torn.podtrace"));
  const RunResult r = RunPodscope({"check", Path("torn.podtrace")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("torn.podtrace: recovered"));
  EXPECT_THAT(r.out, HasSubstr("not closed"));
  EXPECT_THAT(r.out, HasSubstr("30 events recovered from 3 of 3 chunks"));
  EXPECT_THAT(r.out, HasSubstr("7 bytes skipped"));
  EXPECT_THAT(r.out, HasSubstr("offset " + FormatCount(info.chunk_offset[3]) +
                               ", 7 bytes"));

  simdjson::dom::array files = CheckJson({Path("torn.podtrace")}, 1);
  ASSERT_EQ(files.size(), 1u);
  simdjson::dom::element f = files.at(0);
  EXPECT_EQ(std::string_view(f["status"]), "recovered");
  EXPECT_EQ(uint64_t(f["events"]), 30u);
  EXPECT_FALSE(bool(f["has_index"]));
  EXPECT_EQ(uint64_t(f["skipped_bytes"]), 7u);
  simdjson::dom::array skipped = f["skipped"];
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(uint64_t(skipped.at(0)["offset"]), info.chunk_offset[3]);
  EXPECT_EQ(uint64_t(skipped.at(0)["bytes"]), 7u);
  EXPECT_FALSE(std::string_view(skipped.at(0)["reason"]).empty());
  EXPECT_TRUE(f["error"].is_null());
}

TEST_F(CheckCli, UnclosedFileIsRecoveredWithNothingSkipped) {
  WriteUnclosed(Path("unclosed.podtrace"));
  const RunResult r = RunPodscope({"check", Path("unclosed.podtrace")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("40 events recovered"));
  EXPECT_THAT(r.out, HasSubstr("no bytes skipped"));
}

TEST_F(CheckCli, DamagedChunkInAClosedFileIsSkippedAndNamed) {
  const ChunkedFile info = WriteCorrupted(Path("corrupt.podtrace"));
  simdjson::dom::array files = CheckJson({Path("corrupt.podtrace")}, 1);
  ASSERT_EQ(files.size(), 1u);
  simdjson::dom::element f = files.at(0);
  EXPECT_EQ(std::string_view(f["status"]), "recovered");
  EXPECT_TRUE(bool(f["has_index"]));
  EXPECT_EQ(uint64_t(f["events"]), 30u);
  simdjson::dom::array skipped = f["skipped"];
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(uint64_t(skipped.at(0)["offset"]), info.chunk_offset[2]);
  EXPECT_EQ(uint64_t(skipped.at(0)["bytes"]),
            info.chunk_offset[3] - info.chunk_offset[2]);
}

TEST_F(CheckCli, GarbageAndNewerVersionsAreUnreadable) {
  WriteGarbage(Path("garbage.podtrace"));
  RunResult r = RunPodscope({"check", Path("garbage.podtrace")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("garbage.podtrace: unreadable"));
  EXPECT_THAT(r.out, HasSubstr("not a Podscope trace"));

  WriteNewerVersion(Path("future.podtrace"));
  r = RunPodscope({"check", Path("future.podtrace")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("future.podtrace: unreadable"));
  EXPECT_THAT(r.out, HasSubstr("newer"));

  r = RunPodscope({"check", Path("missing.podtrace")});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("missing.podtrace: unreadable"));
  EXPECT_THAT(r.out, HasSubstr("no such file"));
}

TEST_F(CheckCli, MixedSetReportsEveryFileInOrder) {
  WriteCapture(dir_);
  WriteTorn(Path("torn.podtrace"));
  WriteGarbage(Path("garbage.podtrace"));
  const std::vector<std::string> files = {Path("host-a.100.podtrace"),
                                          Path("torn.podtrace"),
                                          Path("garbage.podtrace")};
  std::vector<std::string> args = {"check"};
  args.insert(args.end(), files.begin(), files.end());
  const RunResult r = RunPodscope(args);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(
      r.out, HasSubstr("3 files checked: 1 intact, 1 recovered, 1 unreadable"));

  simdjson::dom::array array = CheckJson(files, 3);
  ASSERT_EQ(array.size(), 3u);
  EXPECT_EQ(std::string_view(array.at(0)["status"]), "intact");
  EXPECT_EQ(std::string_view(array.at(1)["status"]), "recovered");
  EXPECT_EQ(std::string_view(array.at(2)["status"]), "unreadable");
  EXPECT_EQ(std::string_view(array.at(2)["path"]), files[2]);
  EXPECT_THAT(std::string(std::string_view(array.at(2)["error"])),
              HasSubstr("not a Podscope trace"));

  // Damage without unreadable files exits 1.
  EXPECT_EQ(RunPodscope({"check", files[0], files[1]}).exit_code, 1);
}

TEST_F(CheckCli, FolderIsSearchedForTraces) {
  WriteCapture(dir_ / "run");
  simdjson::dom::array array = CheckJson({(dir_ / "run").string()}, 0);
  ASSERT_EQ(array.size(), 2u);
  EXPECT_EQ(std::string_view(array.at(0)["path"]),
            (dir_ / "run" / "host-a.100.podtrace").string());
  EXPECT_EQ(uint64_t(array.at(1)["events"]), Capture::kEventsB);
}

}  // namespace
}  // namespace podscope::tools::testing
