// `podscope dump` run as a user runs it, against a profiler server in this
// process whose flight recorder runs; the folder it fills opens in
// `podscope summary` and `podscope analyze` like a capture's.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "podscope/profiler/flight_recorder.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "run_podscope.h"

namespace podscope::tools {
namespace {

using testing::RunPodscope;
using testing::RunResult;

std::string Fresh(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podscope-dump-cli-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

struct Recording {
  Recording() {
    EXPECT_TRUE(profiler::StartFlightRecorder().ok());
    for (int i = 0; i < 50; ++i) {
      PODSCOPE_TRACE("train_step");
      { PODSCOPE_TRACE("forward"); }
      { PODSCOPE_TRACE("backward"); }
    }
  }
  ~Recording() { profiler::StopFlightRecorder(); }
};

TEST(DumpCli, WritesASessionTheToolsOpen) {
  Recording recording;
  const std::string root = Fresh("root");
  profiler::ServerOptions options;
  options.dump_root = root;
  auto server = profiler::StartServer(0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  const RunResult r =
      RunPodscope({"dump", "--service_addr", (*server)->address(), "--session",
                   "hang-1", "--reason", "by hand"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("hang-1/"), std::string::npos) << r.out;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(root + "/hang-1")) {
    EXPECT_EQ(e.path().extension(), ".podtrace") << e.path();
    ++files;
  }
  EXPECT_EQ(files, 1);
  const RunResult summary = RunPodscope({"summary", root + "/hang-1"});
  EXPECT_EQ(summary.exit_code, 0) << summary.out << summary.err;
  EXPECT_NE(summary.out.find("train_step"), std::string::npos) << summary.out;
  const RunResult analyze = RunPodscope({"analyze", root + "/hang-1"});
  EXPECT_EQ(analyze.exit_code, 0) << analyze.out << analyze.err;
  const RunResult check = RunPodscope({"check", root + "/hang-1"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(DumpCli, AHostileSessionIsAUsageError) {
  const RunResult r = RunPodscope(
      {"dump", "--service_addr", "127.0.0.1:1", "--session", "../x"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--session"), std::string::npos) << r.err;
}

TEST(DumpCli, AServerThatRefusesIsNamed) {
  Recording recording;
  unsetenv("PODSCOPE_DUMP_ROOT");
  auto server = profiler::StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  const RunResult r = RunPodscope(
      {"dump", "--service_addr", (*server)->address(), "--session", "s"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.err.find((*server)->address()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dump root"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace podscope::tools
