// The per-user token file as a user of a shared machine meets it: where it
// lives, who may read it, what happens when many processes start at once,
// and what is refused. Each test points XDG_RUNTIME_DIR and HOME at folders
// of its own.
#include "podscope/profiler/user_token.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::profiler {
namespace {

namespace fs = std::filesystem;

class UserTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string name =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    root_ = fs::path(::testing::TempDir()) /
            ("user_token_" + name + "_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "run");
    fs::create_directories(root_ / "home");
    setenv("XDG_RUNTIME_DIR", (root_ / "run").c_str(), 1);
    setenv("HOME", (root_ / "home").c_str(), 1);
  }
  void TearDown() override { fs::remove_all(root_); }

  static unsigned Mode(const fs::path& p) {
    struct stat st;
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }

  fs::path root_;
};

TEST_F(UserTokenTest, FirstUseCreatesAPrivateFileInTheRuntimeFolder) {
  auto none = UserToken(/*create=*/false);
  EXPECT_TRUE(absl::IsNotFound(none.status())) << none.status();
  EXPECT_FALSE(fs::exists(root_ / "run" / "podscope"));

  auto token = UserToken(/*create=*/true);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->size(), 64u);
  const fs::path file = root_ / "run" / "podscope" / "token";
  EXPECT_EQ(*UserTokenPath(), file.string());
  EXPECT_EQ(Mode(file), 0600u);
  EXPECT_EQ(Mode(file.parent_path()), 0700u);
  // Nothing else is left in the folder (no temporary files).
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()),
                          fs::directory_iterator()),
            1);
  // Later uses, creating or not, read the same token.
  EXPECT_EQ(*UserToken(true), *token);
  EXPECT_EQ(*UserToken(false), *token);
}

TEST_F(UserTokenTest, AUmaskCannotMakeTheFileUnreadable) {
  const mode_t old = ::umask(0277);
  auto token = UserToken(true);
  ::umask(old);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(Mode(root_ / "run" / "podscope" / "token"), 0600u);
}

TEST_F(UserTokenTest, WithoutARuntimeFolderTheHomeFolderHoldsIt) {
  unsetenv("XDG_RUNTIME_DIR");
  auto token = UserToken(true);
  ASSERT_TRUE(token.ok()) << token.status();
  const fs::path file = root_ / "home" / ".podscope" / "token";
  EXPECT_EQ(*UserTokenPath(), file.string());
  EXPECT_EQ(Mode(file), 0600u);
  EXPECT_EQ(Mode(file.parent_path()), 0700u);
  // A runtime folder that does not exist is no runtime folder.
  setenv("XDG_RUNTIME_DIR", (root_ / "missing").c_str(), 1);
  EXPECT_EQ(*UserToken(false), *token);
}

TEST_F(UserTokenTest, ConcurrentFirstUsesInThreadsAgreeOnOneToken) {
  constexpr int kThreads = 16;
  std::vector<std::string> tokens(kThreads);
  std::vector<std::string> errors(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      auto t = UserToken(true);
      if (t.ok()) {
        tokens[i] = *t;
      } else {
        errors[i] = t.status().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> distinct;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(errors[i], "") << "thread " << i;
    distinct.insert(tokens[i]);
  }
  EXPECT_EQ(distinct.size(), 1u);
}

TEST_F(UserTokenTest, ConcurrentFirstUsesInProcessesAgreeOnOneToken) {
  constexpr int kProcesses = 12;
  // Every child waits on this pipe until all exist, then creates at once.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  std::vector<int> answers;
  for (int i = 0; i < kProcesses; ++i) {
    int out[2];
    ASSERT_EQ(::pipe(out), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      ::close(out[0]);
      char c;
      (void)::read(go[0], &c, 1);
      auto t = UserToken(true);
      const std::string answer =
          t.ok() ? *t : "error: " + t.status().ToString();
      (void)::write(out[1], answer.data(), answer.size());
      ::_exit(0);
    }
    ::close(out[1]);
    children.push_back(pid);
    answers.push_back(out[0]);
  }
  ::close(go[0]);
  ::close(go[1]);  // wakes every child at once
  std::set<std::string> distinct;
  for (int fd : answers) {
    std::string answer;
    char buffer[256];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
      answer.append(buffer, n);
    ::close(fd);
    EXPECT_EQ(answer.find("error"), std::string::npos) << answer;
    distinct.insert(answer);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(distinct.size(), 1u);
  EXPECT_EQ(*distinct.begin(), *UserToken(false));
}

TEST_F(UserTokenTest, ASymlinkedFileIsRefused) {
  const fs::path dir = root_ / "run" / "podscope";
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all);
  {
    std::ofstream elsewhere(root_ / "planted");
    elsewhere << "attacker-chosen\n";
  }
  fs::permissions(root_ / "planted", fs::perms::owner_read);
  fs::create_symlink(root_ / "planted", dir / "token");
  for (bool create : {false, true}) {
    auto token = UserToken(create);
    ASSERT_FALSE(token.ok());
    EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(token.status().message().find((dir / "token").string()),
              std::string::npos)
        << token.status();
    EXPECT_NE(token.status().message().find("symlink"), std::string::npos)
        << token.status();
  }
}

TEST_F(UserTokenTest, AFileOthersCanReadIsRefused) {
  ASSERT_TRUE(UserToken(true).ok());
  const fs::path file = root_ / "run" / "podscope" / "token";
  for (unsigned mode : {0640u, 0604u}) {
    ASSERT_EQ(::chmod(file.c_str(), mode), 0);
    auto token = UserToken(false);
    ASSERT_FALSE(token.ok()) << mode;
    EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(token.status().message().find("group or others"),
              std::string::npos)
        << token.status();
    EXPECT_NE(token.status().message().find("chmod 600"), std::string::npos);
  }
}

TEST_F(UserTokenTest, AFolderOthersCanWriteIsRefused) {
  const fs::path dir = root_ / "run" / "podscope";
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  auto token = UserToken(true);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(token.status().message().find("writable by group or others"),
            std::string::npos)
      << token.status();
  EXPECT_FALSE(fs::exists(dir / "token"));
}

TEST_F(UserTokenTest, AFileOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  ASSERT_TRUE(UserToken(true).ok());
  const fs::path file = root_ / "run" / "podscope" / "token";
  ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
  auto token = UserToken(false);
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("not to this user"),
            std::string::npos)
      << token.status();
}

TEST_F(UserTokenTest, ClientsSendTheUserTokenOnlyToLoopback) {
  unsetenv("PODSCOPE_PROFILER_TOKEN");
  // No file yet: no token, and nothing is created by a client.
  EXPECT_EQ(*ClientToken("", "127.0.0.1:9012"), "");
  EXPECT_FALSE(fs::exists(root_ / "run" / "podscope"));
  const std::string mine = *UserToken(true);
  EXPECT_EQ(*ClientToken("", "127.0.0.1:9012"), mine);
  EXPECT_EQ(*ClientToken("", "localhost:9012"), mine);
  EXPECT_EQ(*ClientToken("", "[::1]:9012"), mine);
  EXPECT_EQ(*ClientToken("", "10.1.2.3:9012"), "");
  EXPECT_EQ(*ClientToken("given", "127.0.0.1:9012"), "given");
  setenv("PODSCOPE_PROFILER_TOKEN", "from-env", 1);
  EXPECT_EQ(*ClientToken("", "127.0.0.1:9012"), "from-env");
  setenv("PODSCOPE_PROFILER_TOKEN", "", 1);
  EXPECT_EQ(*ClientToken("", "127.0.0.1:9012"), "");
  unsetenv("PODSCOPE_PROFILER_TOKEN");
}

}  // namespace
}  // namespace podscope::profiler
