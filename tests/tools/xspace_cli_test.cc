// `podscope check`, `summary` and `export` on XSpace: a run folder written
// like JAX's opens through the import, a damaged file is named, and
// `export --format xspace` writes what XProf reads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "podscope/trace_format/xplane.pb.h"
#include "run_podscope.h"
#include "trace_fixtures.h"
#include "xspace_fixtures.h"

namespace podscope::tools::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using trace_format::testing::JaxRun;

class XSpaceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("xspace_cli");
    // The children's import cache stays in the test's folder.
    setenv("XDG_CACHE_HOME", (dir_ / "cache").c_str(), 1);
    run_ = trace_format::testing::WriteJaxRun(dir_ / "logdir");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  JaxRun run_;
};

TEST_F(XSpaceCli, SummaryPutsBothHostsOnOneTimeline) {
  const RunResult r = RunPodscope({"summary", "--json", run_.logdir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(uint64_t(doc["total_events"]), 2 * JaxRun::kEventsPerHost);
  EXPECT_EQ(simdjson::dom::array(doc["hosts"]).size(), 2u);
  simdjson::dom::array processes = doc["processes"];
  ASSERT_EQ(processes.size(), 2u);
  for (simdjson::dom::element p : processes) {
    EXPECT_EQ(std::string_view(p["session_id"]), "run1");
    EXPECT_EQ(simdjson::dom::array(p["tracks"]).size(), JaxRun::kTracksPerHost);
  }
  EXPECT_TRUE(bool(doc["time_span"]["clocks_aligned"]));
  // From host 0's first step to host 1's last "Steps" event, 5 ms later.
  EXPECT_EQ(int64_t(doc["time_span"]["duration_ns"]),
            JaxRun::kHostSkewNs + 31'000);
}

TEST_F(XSpaceCli, CheckImportsAndNamesADamagedFile) {
  RunResult r = RunPodscope({"check", run_.run_dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 files checked: 2 intact"));

  fs::resize_file(run_.files[0], fs::file_size(run_.files[0]) - 5);
  r = RunPodscope({"check", run_.files[0].string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr(run_.files[0].string()));
  EXPECT_THAT(r.out, HasSubstr("damaged or truncated"));

  // Beside a good file: a warning naming the bad one, the rest summarised.
  r = RunPodscope({"summary", run_.run_dir.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: skipping " + run_.files[0].string()));
  EXPECT_THAT(r.out, HasSubstr("worker-1"));
}

TEST_F(XSpaceCli, ExportXSpaceWritesXProfsLayout) {
  const fs::path out = dir_ / "xprof";
  const RunResult r =
      RunPodscope({"export", "--format", "xspace", run_.logdir.string(), "-o",
                   out.string(), "--session", "again"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* host : {"worker-0", "worker-1"}) {
    const fs::path file =
        out / "plugins/profile/again" / (std::string(host) + ".xplane.pb");
    ASSERT_TRUE(fs::exists(file)) << file << "\n" << r.out;
    tensorflow::profiler::XSpace space;
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(space.ParseFromIstream(&in));
    EXPECT_EQ(space.hostnames(0), host);
    uint64_t events = 0;
    for (const auto& p : space.planes()) {
      for (const auto& l : p.lines()) events += l.events_size();
    }
    // Every event, plus the "Steps" line derived for the device plane
    // from the host's train_step slices.
    EXPECT_GE(events, JaxRun::kEventsPerHost);
  }
  EXPECT_THAT(r.out, HasSubstr("wrote 46 events from 2 files"));
}

}  // namespace
}  // namespace podscope::tools::testing
