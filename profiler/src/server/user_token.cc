#include "podscope/profiler/user_token.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"

namespace podscope::profiler {
namespace {

constexpr size_t kTokenBytes = 32;
constexpr size_t kMaxTokenFileBytes = 4096;

absl::Status Refused(const std::string& path, const std::string& why) {
  return absl::FailedPreconditionError(
      absl::StrCat("the profiler token file ", path, " ", why,
                   "; refusing it (remove it to get a new one, or set "
                   "PODSCOPE_PROFILER_TOKEN)"));
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::PermissionDeniedError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

std::string HomeFolder() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home) {
    return home;
  }
  std::vector<char> buffer(16384);
  passwd pw;
  passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buffer.data(), buffer.size(), &found) == 0 &&
      found != nullptr && found->pw_dir != nullptr) {
    return found->pw_dir;
  }
  return "";
}

absl::StatusOr<std::string> TokenFolder() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st;
  if (xdg != nullptr && *xdg && ::stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::StrCat(xdg, "/podscope");
  }
  const std::string home = HomeFolder();
  if (home.empty()) {
    return absl::FailedPreconditionError(
        "no folder for the profiler token file: neither XDG_RUNTIME_DIR nor "
        "HOME names one (set PODSCOPE_PROFILER_TOKEN instead)");
  }
  return home + "/.podscope";
}

// The folder exists (made 0700 when `create`), is this user's and only
// this user may change what is in it.
absl::Status CheckFolder(const std::string& dir, bool create) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Errno("inspect", dir);
    if (!create) {
      return absl::NotFoundError(absl::StrCat(dir, " does not exist"));
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Errno("create the folder", dir);
    }
    if (::lstat(dir.c_str(), &st) != 0) return Errno("inspect", dir);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Refused(dir, "(its folder) is not a folder (a symlink?)");
  }
  if (st.st_uid != geteuid()) {
    return Refused(dir, absl::StrCat("(its folder) belongs to uid ", st.st_uid,
                                     ", not to this user"));
  }
  if ((st.st_mode & 022) != 0) {
    return Refused(dir,
                   "(its folder) is writable by group or others "
                   "(chmod 700 it)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    }
    if (errno == ELOOP) return Refused(path, "is a symlink");
    return Errno("open", path);
  }
  struct stat st;
  absl::Status problem;
  if (::fstat(fd, &st) != 0) {
    problem = Errno("inspect", path);
  } else if (!S_ISREG(st.st_mode)) {
    problem = Refused(path, "is not a regular file");
  } else if (st.st_uid != geteuid()) {
    problem = Refused(
        path, absl::StrCat("belongs to uid ", st.st_uid, ", not to this user"));
  } else if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o",
                  static_cast<unsigned>(st.st_mode & 07777));
    problem = Refused(path, absl::StrCat("is open to group or others (mode ",
                                         mode, "; chmod 600 it)"));
  }
  std::string text;
  if (problem.ok()) {
    char buffer[kMaxTokenFileBytes + 1];
    while (text.size() <= kMaxTokenFileBytes) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer - text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = Errno("read", path);
        break;
      }
      if (n == 0) break;
      text.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!problem.ok()) return problem;
  if (text.size() > kMaxTokenFileBytes) {
    return Refused(path, "is over 4 KiB");
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  if (text.empty()) return Refused(path, "is empty");
  for (const char c : text) {
    if (c <= ' ' || c > '~') {
      return Refused(path, "holds characters other than visible ASCII");
    }
  }
  return text;
}

absl::StatusOr<std::string> RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::getrandom(raw.data() + done, bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InternalError(absl::StrCat(
          "cannot draw a random profiler token: ", std::strerror(errno)));
    }
    done += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (const char c : raw) {
    hex += kHex[static_cast<unsigned char>(c) >> 4];
    hex += kHex[static_cast<unsigned char>(c) & 15];
  }
  return hex;
}

// Writes a fresh token into a file of its own, then links it into place:
// the link fails when another process was first, and everyone then reads
// the one file that won.
absl::Status CreateTokenFile(const std::string& dir, const std::string& path) {
  PODSCOPE_ASSIGN_OR_RETURN(auto token, RandomHex(kTokenBytes));
  PODSCOPE_ASSIGN_OR_RETURN(auto suffix, RandomHex(8));
  const std::string temp = absl::StrCat(dir, "/.token.", suffix);
  const int fd = ::open(
      temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create", temp);
  const std::string text = token + "\n";
  // A umask cannot leave the file unreadable to its user.
  bool ok = ::fchmod(fd, 0600) == 0;
  ok = ok && ::write(fd, text.data(), text.size()) ==
                 static_cast<ssize_t>(text.size());
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    absl::Status s = Errno("write", temp);
    ::unlink(temp.c_str());
    return s;
  }
  int linked = ::link(temp.c_str(), path.c_str());
  if (linked != 0 && (errno == EPERM || errno == EOPNOTSUPP)) {
    // A filesystem without hard links: the same no-replace rule by rename.
    linked = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(),
                         RENAME_NOREPLACE);
  }
  const int err = errno;
  ::unlink(temp.c_str());
  if (linked != 0 && err != EEXIST) {
    errno = err;
    return Errno("create", path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> UserTokenPath() {
  PODSCOPE_ASSIGN_OR_RETURN(auto dir, TokenFolder());
  return dir + "/token";
}

absl::StatusOr<std::string> UserToken(bool create) {
  PODSCOPE_ASSIGN_OR_RETURN(auto dir, TokenFolder());
  const std::string path = dir + "/token";
  if (absl::Status s = CheckFolder(dir, create); !s.ok()) {
    if (absl::IsNotFound(s)) {
      return absl::NotFoundError(absl::StrCat(path, " does not exist"));
    }
    return s;
  }
  auto token = ReadTokenFile(path);
  if (!create || !absl::IsNotFound(token.status())) return token;
  if (absl::Status s = CreateTokenFile(dir, path); !s.ok()) return s;
  return ReadTokenFile(path);
}

absl::StatusOr<std::string> ClientToken(const std::string& given,
                                        const std::string& address) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("PODSCOPE_PROFILER_TOKEN")) return env;
  auto host_port = base::SplitHostPort(address, "the profiler address");
  if (!host_port.ok() || !base::IsLoopbackHost(host_port->first)) return "";
  auto token = UserToken(/*create=*/false);
  if (absl::IsNotFound(token.status())) return "";
  return token;
}

}  // namespace podscope::profiler
