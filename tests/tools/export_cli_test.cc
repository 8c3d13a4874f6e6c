// `podscope export --format chrome` on the known capture.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "run_podscope.h"
#include "text_format.h"
#include "trace_fixtures.h"

namespace podscope::tools::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ReadGzip(const fs::path& file) {
  gzFile gz = gzopen(file.c_str(), "rb");
  std::string out;
  if (gz == nullptr) return out;
  char buffer[65536];
  int n;
  while ((n = gzread(gz, buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  gzclose(gz);
  return out;
}

struct ChromeFacts {
  bool parsed = false;
  size_t complete_events = 0;  // "X"
  size_t process_names = 0;
  // The earliest "X" event of the process named after host-b, in µs.
  double host_b_first_us = std::numeric_limits<double>::max();
};

ChromeFacts Inspect(const std::string& json) {
  ChromeFacts facts;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return facts;
  simdjson::dom::array events;
  if (doc["traceEvents"].get(events) != simdjson::SUCCESS) return facts;
  facts.parsed = true;
  int64_t host_b_pid = -1;
  for (simdjson::dom::element e : events) {
    std::string_view ph = e["ph"];
    if (ph == "M" && std::string_view(e["name"]) == "process_name") {
      ++facts.process_names;
      if (std::string_view(e["args"]["name"]).starts_with("host-b")) {
        host_b_pid = int64_t(e["pid"]);
      }
    }
  }
  for (simdjson::dom::element e : events) {
    if (std::string_view(e["ph"]) != "X") continue;
    ++facts.complete_events;
    if (int64_t(e["pid"]) == host_b_pid) {
      facts.host_b_first_us = std::min(facts.host_b_first_us, double(e["ts"]));
    }
  }
  return facts;
}

class ExportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("export");
    WriteCapture(dir_ / "capture");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Capture() const { return (dir_ / "capture").string(); }
  fs::path dir_;
};

TEST_F(ExportCli, ChromeJsonHoldsEverySliceOnTheAlignedClock) {
  const fs::path out = dir_ / "trace.json";
  const RunResult r = RunPodscope(
      {"export", "--format", "chrome", Capture(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote 26 events ("));
  EXPECT_THAT(r.out,
              HasSubstr("(" + FormatCount(fs::file_size(out)) + " bytes"));
  EXPECT_THAT(r.out, HasSubstr("from 2 files to " + out.string()));
  // No terminal, no progress line.
  EXPECT_EQ(r.err, "");
  const ChromeFacts facts = Inspect(ReadFile(out));
  ASSERT_TRUE(facts.parsed);
  EXPECT_EQ(facts.complete_events, Capture::kSlices);
  EXPECT_EQ(facts.process_names, 2u);
  EXPECT_DOUBLE_EQ(facts.host_b_first_us, 1020.0);
}

TEST_F(ExportCli, NoAlignClocksKeepsEachHostsClock) {
  const fs::path out = dir_ / "local.json";
  const RunResult r =
      RunPodscope({"export", "--no-align-clocks", "--format=chrome", Capture(),
                   "--output", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_DOUBLE_EQ(Inspect(ReadFile(out)).host_b_first_us, 50'000.0);
}

TEST_F(ExportCli, GzipByFlagOrByName) {
  for (const auto& [name, flag] :
       {std::pair<std::string, bool>{"trace.json.gz", false},
        std::pair<std::string, bool>{"trace-z.json", true}}) {
    const fs::path out = dir_ / name;
    std::vector<std::string> args = {"export",  "--format", "chrome",
                                     Capture(), "-o",       out.string()};
    if (flag) args.push_back("--gzip");
    const RunResult r = RunPodscope(args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("gzip"));
    const std::string raw = ReadFile(out);
    ASSERT_GE(raw.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1f) << name;
    EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8b) << name;
    EXPECT_EQ(Inspect(ReadGzip(out)).complete_events, Capture::kSlices);
  }
}

TEST_F(ExportCli, ProgressIsDrawnOnATerminalOnly) {
  const fs::path out = dir_ / "tty.json";
  const RunResult r = RunPodscopeWithTtyStderr(
      {"export", "--format", "chrome", Capture(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("exporting: 4/4 tracks (100%)"));
  EXPECT_THAT(r.out, HasSubstr("wrote 26 events"));
}

TEST_F(ExportCli, UnwritableOutputExitsFour) {
  const std::string out = (dir_ / "no-such-dir" / "trace.json").string();
  const RunResult r =
      RunPodscope({"export", "--format", "chrome", Capture(), "-o", out});
  EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(out));
}

TEST_F(ExportCli, MissingInputExitsThree) {
  const RunResult r =
      RunPodscope({"export", "--format", "chrome", (dir_ / "missing").string(),
                   "-o", (dir_ / "out.json").string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no such file or folder"));
  EXPECT_FALSE(fs::exists(dir_ / "out.json"));
}

TEST_F(ExportCli, DamagedFilesAreExportedWithAWarning) {
  WriteTorn(dir_ / "capture" / "host-c.300.podtrace");
  WriteGarbage(dir_ / "capture" / "junk.podtrace");
  const fs::path out = dir_ / "trace.json";
  const RunResult r = RunPodscope(
      {"export", "--format", "chrome", Capture(), "-o", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: skipping"));
  EXPECT_THAT(r.err, HasSubstr("junk.podtrace"));
  EXPECT_THAT(r.err, HasSubstr("host-c.300.podtrace was recovered"));
  EXPECT_THAT(r.out, HasSubstr("wrote 56 events"));
  EXPECT_EQ(Inspect(ReadFile(out)).complete_events, Capture::kSlices + 30);
}

}  // namespace
}  // namespace podscope::tools::testing
