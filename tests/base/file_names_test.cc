// SafeFileComponent turns any name a peer or a file sends into one safe
// file-name component; MakeDirectories treats a folder that exists by the
// time mkdir fails as made; CreateFileExclusive and RenameToFreshName
// never follow a planted link nor replace an existing file.
#include "podscope/base/file_names.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace podscope::base {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("file-names-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every result is one component a folder can hold under that very name.
void ExpectOneComponent(std::string_view input) {
  const std::string out = SafeFileComponent(input);
  SCOPED_TRACE("input '" + std::string(input) + "' -> '" + out + "'");
  ASSERT_FALSE(out.empty());
  EXPECT_LE(out.size(), kMaxFileComponentBytes);
  EXPECT_NE(out, ".");
  EXPECT_NE(out, "..");
  EXPECT_NE(out.front(), '.');
  EXPECT_NE(out.front(), '-');
  for (char c : out) {
    EXPECT_NE(c, '/');
    EXPECT_NE(c, '\0');
    EXPECT_GE(static_cast<unsigned char>(c), 0x21);
    EXPECT_LT(static_cast<unsigned char>(c), 0x7f);
  }
  EXPECT_EQ(fs::path(out).filename().string(), out);
  EXPECT_EQ(SafeFileComponent(input), out) << "not deterministic";
  EXPECT_TRUE(IsSafeFileComponent(out)) << "not a fixed point";
}

TEST(SafeFileComponent, KeepsOrdinaryHostNames) {
  EXPECT_EQ(SafeFileComponent("worker-3.cluster.local"),
            "worker-3.cluster.local");
  EXPECT_EQ(SafeFileComponent("2026-11-26_10:46:55"), "2026-11-26_10:46:55");
  EXPECT_EQ(SafeFileComponent("host+1@rack=2,a"), "host+1@rack=2,a");
}

TEST(SafeFileComponent, NeverLeavesTheFolder) {
  EXPECT_EQ(SafeFileComponent("../../x"), "_.._.._x");
  EXPECT_EQ(SafeFileComponent("/abs/x"), "_abs_x");
  EXPECT_EQ(SafeFileComponent(".."), "_..");
  EXPECT_EQ(SafeFileComponent("."), "_.");
  EXPECT_EQ(SafeFileComponent(".hidden"), "_.hidden");
  EXPECT_EQ(SafeFileComponent("-rf"), "_-rf");
  EXPECT_EQ(SafeFileComponent(""), "unnamed");
  EXPECT_EQ(SafeFileComponent(std::string("a\0b", 3)), "a_b");
  EXPECT_EQ(SafeFileComponent("a\\b\nc\x7f d"), "a_b_c__d");
  EXPECT_EQ(SafeFileComponent("h\xc3\xa9te"), "h__te");
  for (std::string_view s :
       {"../../x", "/abs/x", "/", "//", "..", ".", "", "-", ".-", "\n",
        "a/../../b", "x\x01y", "\xff\xfe", "~", " "}) {
    ExpectOneComponent(s);
  }
  // Every single byte, and every pair of the troublesome ones.
  for (int b = 0; b < 256; ++b) {
    ExpectOneComponent(std::string(1, static_cast<char>(b)));
  }
  for (char a : std::string("./-\\\0\n ", 7)) {
    for (char b : std::string("./-\\\0\n ", 7)) {
      ExpectOneComponent(std::string{a, b});
    }
  }
}

TEST(SafeFileComponent, BoundsTheLengthAndKeepsLongNamesApart) {
  const std::string a(1000, 'a');
  std::string b = a;
  b.back() = 'b';
  ExpectOneComponent(a);
  ExpectOneComponent(b);
  EXPECT_EQ(SafeFileComponent(a).size(), kMaxFileComponentBytes);
  EXPECT_NE(SafeFileComponent(a), SafeFileComponent(b));
  EXPECT_EQ(SafeFileComponent(a).substr(0, 40), std::string(40, 'a'));
  // Exactly at the bound: kept whole.
  const std::string edge(kMaxFileComponentBytes, 'e');
  EXPECT_EQ(SafeFileComponent(edge), edge);
  ExpectOneComponent(std::string(kMaxFileComponentBytes, '.'));
}

TEST(MakeDirectories, ManyThreadsAndProcessesMakeOneNestedFolder) {
  const std::string root = FreshDir("race");
  const std::string target = root + "/logs/session/nested/deeper";
  constexpr int kThreads = 16, kProcesses = 8;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(MakeDirectories(target) ? 1 : 0);
    children.push_back(pid);
  }
  std::atomic<int> ready{0}, failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      ++ready;
      while (ready.load() < kThreads) {
      }
      if (MakeDirectories(target)) ++failures;
    });
  }
  for (std::thread& t : threads) t.join();
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(fs::is_directory(target));
}

// A bucket mounted through FUSE: mkdir of a folder another writer just
// made fails with EACCES (or EEXIST) even though the folder is there.
int MkdirLikeABucket(const char* path, unsigned mode) {
  ::mkdir(path, mode);
  errno = EACCES;
  return -1;
}

TEST(MakeDirectories, AFolderThatExistsByThenIsMadeWhateverMkdirSays) {
  const std::string root = FreshDir("bucket");
  EXPECT_FALSE(MakeDirectoriesWith(root + "/a/b/c", &MkdirLikeABucket));
  EXPECT_TRUE(fs::is_directory(root + "/a/b/c"));
}

int MkdirThatRefuses(const char*, unsigned) {
  errno = EACCES;
  return -1;
}

TEST(MakeDirectories, AFolderThatIsNotThereIsAnErrorNamingThePart) {
  const std::string root = FreshDir("refused");
  std::string part;
  const std::error_code e =
      MakeDirectoriesWith(root + "/x/y", &MkdirThatRefuses, &part);
  EXPECT_EQ(e, std::errc::permission_denied);
  EXPECT_EQ(part, root + "/x");
  // A file where a folder should be.
  std::ofstream(root + "/file") << "x";
  EXPECT_TRUE(MakeDirectories(root + "/file/sub", &part));
  EXPECT_EQ(part, root + "/file");
  EXPECT_FALSE(MakeDirectories(root + "//double//slash/"));
  EXPECT_TRUE(fs::is_directory(root + "/double/slash"));
}

TEST(CreateFileExclusive, AClashGetsASuffixAndAPlantedLinkIsNotFollowed) {
  const std::string dir = FreshDir("exclusive");
  const std::string victim = FreshDir("exclusive-victim") + "/victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, fs::path(dir) / "host.7.podtrace");
  std::ofstream(fs::path(dir) / "host.7.1.podtrace") << "earlier";
  UniqueFd folder;
  ASSERT_FALSE(OpenDirectory(dir, &folder));
  std::set<std::string> names;
  for (int i = 0; i < 3; ++i) {
    UniqueFd fd;
    std::string name;
    ASSERT_FALSE(
        CreateFileExclusive(folder.get(), "host.7", ".podtrace", &fd, &name));
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::write(fd.get(), "new", 3), 3);
    EXPECT_FALSE(fd.Close());
    names.insert(name);
  }
  EXPECT_EQ(names,
            (std::set<std::string>{"host.7.2.podtrace", "host.7.3.podtrace",
                                   "host.7.4.podtrace"}));
  EXPECT_EQ(ReadAll(victim), "precious");
  EXPECT_EQ(ReadAll(fs::path(dir) / "host.7.1.podtrace"), "earlier");
  EXPECT_TRUE(fs::is_symlink(fs::path(dir) / "host.7.podtrace"));
}

TEST(RenameToFreshName, NeverReplacesAFileOrALink) {
  const std::string dir = FreshDir("rename");
  const std::string victim = FreshDir("rename-victim") + "/victim";
  std::ofstream(victim) << "precious";
  fs::create_symlink(victim, fs::path(dir) / "h.xplane.pb");
  std::ofstream(fs::path(dir) / "tmp") << "new";
  UniqueFd folder;
  ASSERT_FALSE(OpenDirectory(dir, &folder));
  std::string name;
  ASSERT_FALSE(
      RenameToFreshName(folder.get(), "tmp", "h", ".xplane.pb", &name));
  EXPECT_EQ(name, "h.1.xplane.pb");
  EXPECT_EQ(ReadAll(fs::path(dir) / name), "new");
  EXPECT_FALSE(fs::exists(fs::path(dir) / "tmp"));
  EXPECT_TRUE(fs::is_symlink(fs::path(dir) / "h.xplane.pb"));
  EXPECT_EQ(ReadAll(victim), "precious");
  EXPECT_FALSE(SyncDirectory(folder.get()));
}

TEST(OpenDirectory, RefusesALinkInPlaceOfTheFolder) {
  const std::string dir = FreshDir("dir-link");
  fs::create_directories(fs::path(dir) / "real");
  fs::create_directory_symlink(fs::path(dir) / "real", fs::path(dir) / "link");
  UniqueFd fd;
  EXPECT_TRUE(OpenDirectory(dir + "/link", &fd));
  EXPECT_FALSE(OpenDirectory(dir + "/real", &fd));
}

}  // namespace
}  // namespace podscope::base
