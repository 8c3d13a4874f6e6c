// The names a worker sends become file names only through one sanitiser:
// real profiler servers on loopback in this process answer GetInfo with a
// hostile host name (ServerOptions::host_name), and every file of the
// capture stays inside its session folder, a link planted at a file's name
// is never followed, and two workers that give the same host and pid get
// two files.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/server.h"
#include "trace_file.h"

namespace podscope::profiler {
namespace {

namespace fs = std::filesystem;
using testing::FreshDir;
using testing::ReadTraceFile;

std::unique_ptr<ProfilerServer> ServerCalling(const std::string& host) {
  ServerOptions options;
  options.host_name = host;
  auto server = StartServer(0, options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file and link under `root`, as paths relative to it.
std::set<std::string> EverythingUnder(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_directory()) out.insert(fs::relative(e.path(), root).string());
  }
  return out;
}

CaptureOptions ShortCapture(const std::vector<ProfilerServer*>& servers,
                            const std::string& logdir,
                            const std::string& session) {
  CaptureOptions o;
  for (ProfilerServer* s : servers) o.workers.push_back(s->address());
  o.logdir = logdir;
  o.session = session;
  o.duration_ms = 200;
  o.clock_probes = 2;
  return o;
}

void ExpectCompleteFileIn(const WorkerResult& w, const fs::path& session_dir) {
  EXPECT_TRUE(w.ok) << w.error;
  EXPECT_EQ(fs::path(w.path).parent_path(), session_dir) << w.path;
  auto file = ReadTraceFile(w.path);
  ASSERT_NE(file.reader, nullptr) << w.path;
  EXPECT_TRUE(file.reader->report().has_index) << w.path;
}

TEST(CaptureNames, AHostileHostNameStaysInsideTheSessionFolder) {
  const fs::path root = FreshDir("hostile-host");
  const fs::path logdir = root / "logs";
  const fs::path session_dir = logdir / "s";
  const fs::path outside = root / "outside";
  fs::create_directories(outside);
  const std::string pid = std::to_string(getpid());
  const std::string absolute = (outside / "abs").string();
  for (const std::string& host : {std::string("../../x"), absolute}) {
    // One process records one capture at a time: a server per capture.
    auto server = ServerCalling(host);
    ASSERT_NE(server, nullptr);
    auto result =
        CaptureWorkers(ShortCapture({server.get()}, logdir.string(), "s"));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->workers.size(), 1u);
    ExpectCompleteFileIn(result->workers[0], session_dir);
    // The host as the worker gave it, in the result and the manifest.
    EXPECT_EQ(result->workers[0].host, host);
    EXPECT_TRUE(fs::exists(result->manifest_path));
  }
  EXPECT_TRUE(fs::exists(session_dir / ("_.._.._x." + pid + ".podtrace")));
  EXPECT_TRUE(fs::is_empty(outside));
  for (const std::string& f : EverythingUnder(root)) {
    EXPECT_TRUE(f.starts_with("logs/s/")) << f << " is outside the session";
  }
}

TEST(CaptureNames, ALinkPlantedAtTheFileNameIsNotFollowed) {
  const fs::path root = FreshDir("planted-link");
  const fs::path session_dir = root / "logs" / "s";
  fs::create_directories(session_dir);
  const fs::path victim = root / "victim";
  std::ofstream(victim) << "precious";
  const std::string name = "planted." + std::to_string(getpid());
  fs::create_symlink(victim, session_dir / (name + ".podtrace"));
  // And at the manifest's temporary name.
  fs::create_symlink(victim, session_dir / "manifest.json.tmp");
  auto server = ServerCalling("planted");
  ASSERT_NE(server, nullptr);
  auto result = CaptureWorkers(
      ShortCapture({server.get()}, (root / "logs").string(), "s"));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->workers.size(), 1u);
  ExpectCompleteFileIn(result->workers[0], session_dir);
  EXPECT_EQ(fs::path(result->workers[0].path).filename(), name + ".1.podtrace");
  EXPECT_EQ(ReadAll(victim), "precious");
  EXPECT_TRUE(fs::is_symlink(session_dir / (name + ".podtrace")));
  EXPECT_TRUE(result->manifest_error.empty()) << result->manifest_error;
  EXPECT_FALSE(fs::is_symlink(result->manifest_path));
  EXPECT_NE(ReadAll(result->manifest_path).find("\"ok\": true"),
            std::string::npos);
}

TEST(CaptureNames, TwoWorkersWithTheSameHostAndPidGetTwoFiles) {
  const fs::path root = FreshDir("twins");
  // Two addresses of one process: both answer host "twin" and this pid.
  auto server = ServerCalling("twin");
  ASSERT_NE(server, nullptr);
  auto result = CaptureWorkers(ShortCapture({server.get(), server.get()},
                                            (root / "logs").string(), "s"));
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->workers.size(), 2u);
  for (const WorkerResult& w : result->workers) {
    ExpectCompleteFileIn(w, root / "logs" / "s");
  }
  const std::string stem = "twin." + std::to_string(getpid());
  EXPECT_EQ((std::set<std::string>{
                fs::path(result->workers[0].path).filename().string(),
                fs::path(result->workers[1].path).filename().string()}),
            (std::set<std::string>{stem + ".podtrace", stem + ".1.podtrace"}));
}

TEST(CaptureNames, ASessionThatIsNotOneFolderNameIsRefused) {
  const fs::path root = FreshDir("bad-session");
  auto server = ServerCalling("");
  ASSERT_NE(server, nullptr);
  for (const std::string session :
       {"../up", "a/b", "..", ".hidden", "-rf", "/abs"}) {
    auto result = CaptureWorkers(
        ShortCapture({server.get()}, (root / "logs").string(), session));
    ASSERT_FALSE(result.ok()) << session;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find("single folder name"),
              std::string::npos)
        << result.status();
  }
  EXPECT_FALSE(fs::exists(root / "logs"));
  EXPECT_TRUE(EverythingUnder(root).empty());
}

}  // namespace
}  // namespace podscope::profiler
