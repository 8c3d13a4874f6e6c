// A log folder whose disk fills up, on a real (small) tmpfs: during a
// remote capture, for the `podscope capture` command, and under a session
// that records itself. Every file ends readable to its last whole record,
// the full disk is named, and nothing claims success. Needs root (or
// CAP_SYS_ADMIN) to mount; skipped with the reason otherwise, or failed
// with PODSCOPE_REQUIRE_PRIVILEGED=1 (as in CI).
#include <fcntl.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/server.h"
#include "podscope/profiler/session.h"
#include "podscope/profiler/trace.h"
#include "trace_file.h"

extern char** environ;

namespace podscope::profiler {
namespace {

using testing::FreshDir;

// A tmpfs of `bytes` mounted on a fresh folder for the test's life.
class SmallDisk {
 public:
  SmallDisk(const std::string& name, size_t bytes) : dir_(FreshDir(name)) {
    const std::string options = "size=" + std::to_string(bytes);
    if (mount("podscope-test", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              options.c_str()) != 0) {
      error_ = std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallDisk() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string error_;
};

bool PrivilegedTestsRequired() {
  const char* v = std::getenv("PODSCOPE_REQUIRE_PRIVILEGED");
  return v != nullptr && std::string(v) == "1";
}

// CI runs as root: there a disk that cannot be mounted is a failure, not
// a test that quietly never runs.
#define SKIP_WITHOUT_A_SMALL_DISK(disk)                                   \
  if (!(disk).mounted()) {                                                \
    if (PrivilegedTestsRequired()) {                                      \
      FAIL() << "cannot mount a small tmpfs to fill (needs root or "      \
                "CAP_SYS_ADMIN): "                                        \
             << (disk).error() << " (PODSCOPE_REQUIRE_PRIVILEGED=1)";     \
    }                                                                     \
    GTEST_SKIP() << "cannot mount a small tmpfs to fill (needs root or "  \
                    "CAP_SYS_ADMIN): "                                    \
                 << (disk).error()                                        \
                 << "; set PODSCOPE_REQUIRE_PRIVILEGED=1 to make this a " \
                    "failure";                                            \
  }

// Records scopes with large arguments as fast as it can, so that a capture
// outgrows a small disk within a fraction of a second.
class BusyWork {
 public:
  BusyWork()
      : thread_([this] {
          SetThreadName("busy");
          int64_t i = 0;
          while (!stop_.load()) {
            PODSCOPE_TRACE("busy", "index", i, "note",
                           std::string("payload-") + std::to_string(i % 4096));
            ++i;
            if (i % 64 == 0)
              std::this_thread::sleep_for(std::chrono::microseconds(50));
          }
        }) {}
  ~BusyWork() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file opens, and whatever it holds up to its last whole record reads.
void ExpectReadableUpToTheFailure(const std::string& path) {
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_GT(std::filesystem::file_size(path), 0u) << path;
  auto file = testing::ReadTraceFile(path);
  ASSERT_NE(file.reader, nullptr) << path << " does not open";
  EXPECT_FALSE(file.reader->report().has_index) << path;
  EXPECT_GT(file.reader->metadata().pid(), 0) << path;
}

constexpr size_t kDiskBytes = 64 * 1024;

TEST(DiskFull, ACaptureNamesTheFullDiskAndLeavesNoHalfManifest) {
  SmallDisk disk("full-capture", kDiskBytes);
  SKIP_WITHOUT_A_SMALL_DISK(disk);
  auto server = StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  BusyWork work;
  CaptureOptions o;
  o.workers = {(*server)->address()};
  o.logdir = disk.dir();
  o.duration_ms = 3000;
  o.session = "full";
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  const WorkerResult& w = result->workers[0];
  EXPECT_FALSE(w.ok);
  EXPECT_TRUE(w.write_failed);
  EXPECT_NE(w.error.find("No space left on device"), std::string::npos)
      << w.error;
  EXPECT_NE(w.error.find(w.path), std::string::npos) << w.error;
  EXPECT_TRUE(result->write_failed());
  // The manifest is not there at all rather than empty, and the result says
  // why.
  EXPECT_TRUE(result->manifest_path.empty());
  EXPECT_NE(result->manifest_error.find("No space left on device"),
            std::string::npos)
      << result->manifest_error;
  EXPECT_FALSE(std::filesystem::exists(disk.dir() + "/full/manifest.json"));
  EXPECT_FALSE(std::filesystem::exists(disk.dir() + "/full/manifest.json.tmp"));
  ExpectReadableUpToTheFailure(w.path);
}

#ifdef PODSCOPE_BINARY
// `podscope capture` exits 4 (an I/O error here), not 6 (no worker
// answered), and prints no manifest path.
TEST(DiskFull, PodscopeCaptureExitsWithTheIoStatus) {
  SmallDisk disk("full-command", kDiskBytes);
  SKIP_WITHOUT_A_SMALL_DISK(disk);
  auto server = StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  BusyWork work;
  const std::string out_dir = FreshDir("full-command-output");
  const std::string out = out_dir + "/stdout", err = out_dir + "/stderr";
  const std::string address = (*server)->address();
  std::vector<std::string> argv = {
      PODSCOPE_BINARY, "capture",  "--service_addr", address,
      "--logdir",      disk.dir(), "--duration_ms",  "3000",
      "--session",     "cmd"};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(),
                        environ),
            0);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  const std::string printed = ReadAll(out), errors = ReadAll(err);
  EXPECT_EQ(WEXITSTATUS(status), 4) << printed << errors;
  EXPECT_EQ(printed.find("manifest:"), std::string::npos) << printed;
  EXPECT_NE(errors.find("manifest not written"), std::string::npos) << errors;
  EXPECT_NE((printed + errors).find("No space left on device"),
            std::string::npos)
      << printed << errors;
  EXPECT_FALSE(std::filesystem::exists(disk.dir() + "/cmd/manifest.json"));
}
#endif

// A session recording itself onto a disk that fills: StopTrace names the
// full disk instead of returning the path as if all went well, and the file
// reads up to its last whole record.
TEST(DiskFull, StartTraceReportsTheFullDiskAndKeepsWholeRecords) {
  SmallDisk disk("full-trace", kDiskBytes);
  SKIP_WITHOUT_A_SMALL_DISK(disk);
  TraceOptions options;
  options.flush_interval = std::chrono::milliseconds(20);
  ASSERT_TRUE(StartTrace(disk.dir(), options).ok());
  const std::string path = CurrentTracePath();
  {
    BusyWork work;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  auto stopped = StopTrace();
  ASSERT_FALSE(stopped.ok()) << "StopTrace claimed " << *stopped;
  EXPECT_NE(stopped.status().message().find("No space left on device"),
            std::string::npos)
      << stopped.status();
  ExpectReadableUpToTheFailure(path);
}

}  // namespace
}  // namespace podscope::profiler
