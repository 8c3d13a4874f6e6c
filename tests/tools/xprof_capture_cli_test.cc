// `podscope capture` of a mixed job, as a user runs it: two Podscope
// worker processes and two XProf servers (tensorflow.ProfilerService test
// servers, wall clocks off by milliseconds) named in a hosts file; the
// session opens in `podscope analyze` and `podscope summary` as one job,
// and the summary says how each XProf host was lined up.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../profiler/child_process.h"
#include "../profiler/xprof_test_server.h"
#include "gtest/gtest.h"
#include "run_podscope.h"

#ifndef PODSCOPE_CAPTURE_WORKER
#error "PODSCOPE_CAPTURE_WORKER must name the worker binary"
#endif

namespace podscope::tools {
namespace {

namespace fs = std::filesystem;
using profiler::testing::XProfHostOptions;
using profiler::testing::XProfTestServer;
using testing::RunPodscope;
using testing::RunResult;

std::string Fresh(const std::string& name) {
  auto dir = fs::temp_directory_path() /
             ("podscope-xprof-cli-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A Podscope worker process; its port through `port`.
std::unique_ptr<profiler::testing::ChildProcess> StartWorker(int* port) {
  auto child = std::make_unique<profiler::testing::ChildProcess>(
      std::vector<std::string>{PODSCOPE_CAPTURE_WORKER, "--port", "0"});
  std::string line;
  if (!child->ReadLine(&line, 30000) || line.rfind("port ", 0) != 0) {
    return nullptr;
  }
  *port = std::atoi(line.c_str() + 5);
  return child;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(XProfCaptureCli, AMixedSessionFromAHostsFileOpensAsOneJob) {
  std::vector<std::unique_ptr<profiler::testing::ChildProcess>> podscope;
  std::vector<std::unique_ptr<XProfTestServer>> xprof;
  const std::string dir = Fresh("mixed");
  std::string hosts = "# two Podscope workers, two XProf servers\n";
  for (int i = 0; i < 2; ++i) {
    int port = 0;
    podscope.push_back(StartWorker(&port));
    ASSERT_NE(podscope.back(), nullptr);
    hosts += "127.0.0.1:" + std::to_string(port) + "\n";
  }
  for (int i = 0; i < 2; ++i) {
    XProfHostOptions o;
    o.host_name = "xla-host-" + std::to_string(i);
    o.clock_offset_ns = i == 0 ? 1'500'000 : -2'250'000;
    o.jitter_seed = i + 1;
    xprof.push_back(std::make_unique<XProfTestServer>(o));
    ASSERT_TRUE(xprof.back()->ok());
    hosts += "  " + xprof.back()->address() + "  # xla\n";
  }
  std::ofstream(dir + "/hosts.txt") << hosts;
  const RunResult r = RunPodscope(
      {"capture", "--service_addr", "@" + dir + "/hosts.txt", "--logdir", dir,
       "--duration_ms", "400", "--session", "mixed", "--probes", "2",
       "--host_tracer_level", "3", "--also_xplane"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 of 4 workers answered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("xprof, aligned by collectives"), std::string::npos)
      << r.out;
  for (auto& s : xprof) {
    ASSERT_EQ(s->requests().size(), 1u);
    EXPECT_EQ(s->requests()[0].opts().host_tracer_level(), 3u);
  }
  const std::string session = dir + "/mixed";
  int files = 0;
  for (const auto& e : fs::directory_iterator(session)) {
    files += e.path().extension() == ".podtrace";
  }
  EXPECT_EQ(files, 4);
  EXPECT_TRUE(fs::exists(dir + "/plugins/profile/mixed/xla-host-0.xplane.pb"));
  const std::string manifest = ReadAll(session + "/manifest.json");
  EXPECT_NE(manifest.find("\"protocol\": \"podscope\""), std::string::npos);
  EXPECT_NE(manifest.find("\"protocol\": \"xprof\""), std::string::npos);

  const RunResult analyze = RunPodscope({"analyze", "--json", session});
  ASSERT_EQ(analyze.exit_code, 0) << analyze.out << analyze.err;
  // One job of four ranks, the XProf hosts' steps among them.
  EXPECT_NE(analyze.out.find("\"processes\": 4"), std::string::npos);
  const RunResult steps = RunPodscope({"analyze", session});
  EXPECT_NE(steps.out.find("4 ranks"), std::string::npos) << steps.out;
  const RunResult summary = RunPodscope({"summary", session});
  ASSERT_EQ(summary.exit_code, 0) << summary.out << summary.err;
  EXPECT_NE(summary.out.find("4 processes"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("aligned by collectives"), std::string::npos)
      << summary.out;
}

TEST(XProfCaptureCli, AHostsFileIsBoundedAndChecked) {
  const std::string dir = Fresh("hosts-file");
  std::ofstream(dir + "/bad.txt") << "127.0.0.1:9012\nnot an address\n";
  RunResult r = RunPodscope(
      {"capture", "--service_addr", "@" + dir + "/bad.txt", "--logdir", dir});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("worker 'not an address' is not HOST:PORT"),
            std::string::npos)
      << r.err;
  std::ofstream(dir + "/empty.txt") << "# nothing\n\n";
  r = RunPodscope(
      {"capture", "--service_addr", "@" + dir + "/empty.txt", "--logdir", dir});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("holds no address"), std::string::npos) << r.err;
  r = RunPodscope({"capture", "--service_addr", "@" + dir + "/missing.txt",
                   "--logdir", dir});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.txt: cannot be opened"), std::string::npos)
      << r.err;
  {
    std::ofstream big(dir + "/big.txt");
    const std::string line(1000, 'a');
    for (int i = 0; i < 5000; ++i) big << line << ":1\n";
  }
  r = RunPodscope(
      {"capture", "--service_addr", "@" + dir + "/big.txt", "--logdir", dir});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("larger than 4 MiB"), std::string::npos) << r.err;
  r = RunPodscope({"capture", "--service_addr", "127.0.0.1:1", "--logdir", dir,
                   "--align", "sundial"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--align must be"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace podscope::tools
