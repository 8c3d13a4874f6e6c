// `podscope capture` run as a user runs it, against real profiler servers
// (in this process) and one address where nothing listens.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/trace.h"
#include "podscope/trace_format/reader.h"
#include "run_podscope.h"

namespace podscope::tools {
namespace {

using testing::RunPodscope;
using testing::RunPodscopeWithTtyStderr;
using testing::RunResult;

std::string Fresh(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("podscope-capture-cli-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(CaptureCli, WritesTheSessionFolderAndExitsZero) {
  auto server = profiler::StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  std::atomic<bool> stop{false};
  std::thread work([&] {
    while (!stop) {
      PODSCOPE_TRACE("cli-work");
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  const std::string dir = Fresh("ok");
  const RunResult r = RunPodscopeWithTtyStderr(
      {"capture", "--service_addr", (*server)->address(), "--logdir", dir,
       "--duration_ms", "600", "--session", "cli"});
  stop = true;
  work.join();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1 of 1 workers answered"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("capturing 1 worker"), std::string::npos) << r.err;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/cli")) {
    if (e.path().extension() != ".podtrace") continue;
    ++files;
    auto reader = trace_format::TraceReader::Open(e.path().string());
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_TRUE((*reader)->report().has_index);
    EXPECT_GT((*reader)->known_event_count(), 100u);
  }
  EXPECT_EQ(files, 1);
  EXPECT_TRUE(std::filesystem::exists(dir + "/cli/manifest.json"));
  // The folder passes `podscope check`, and the summary shows the clock
  // measurements the capture stored.
  EXPECT_EQ(RunPodscope({"check", dir + "/cli"}).exit_code, 0);
  const RunResult summary = RunPodscope({"summary", dir + "/cli"});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("clocks aligned"), std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("to the reference, +-"), std::string::npos)
      << summary.out;
}

TEST(CaptureCli, SomeAndNoneAnsweredHaveTheirOwnExitCodes) {
  auto server = profiler::StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string dir = Fresh("partial");
  RunResult r = RunPodscope(
      {"capture", "--service_addr", (*server)->address() + ",127.0.0.1:1",
       "--logdir", dir, "--duration_ms", "200", "--connect_timeout_ms", "500"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  EXPECT_NE(r.out.find("FAILED  127.0.0.1:1"), std::string::npos) << r.out;
  r = RunPodscope({"capture", "--service_addr", "127.0.0.1:1", "--logdir", dir,
                   "--duration_ms", "200", "--connect_timeout_ms", "300"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.out.find("nothing recorded: no session written"),
            std::string::npos)
      << r.out;
}

TEST(CaptureCli, UsageErrors) {
  EXPECT_EQ(RunPodscope({"capture", "--logdir", "/tmp/x"}).exit_code, 2);
  EXPECT_EQ(RunPodscope({"capture", "--service_addr", "h:1"}).exit_code, 2);
  RunResult r = RunPodscope(
      {"capture", "--service_addr", "nohostport", "--logdir", "/tmp/x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nohostport"), std::string::npos);
  r = RunPodscope({"capture", "--service_addr", "h:1", "--logdir", "/tmp/x",
                   "--duration_ms", "-3"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunPodscope({"capture", "--service_addr", "h:1", "--logdir", "/tmp/x",
                   "--session", "../up"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("session"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace podscope::tools
