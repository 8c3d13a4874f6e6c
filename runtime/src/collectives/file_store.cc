// A job::KeyValueStore over files in a shared folder (see file_store.h).

#include "podscope/runtime/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "podscope/base/file_names.h"

namespace podscope::runtime {
namespace {

// This abseil's string_view is its own type: convert at the calls.
absl::string_view AV(std::string_view s) { return {s.data(), s.size()}; }

absl::Status ErrnoError(std::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(AV(what), " ", path, ": ", std::strerror(errno)));
}

// A file name holds at most 255 bytes: 'k' and two hex digits a byte.
constexpr size_t kMaxKeyBytes = 120;

class FileStore : public job::KeyValueStore {
 public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}

  absl::Status Set(std::string_view key, std::string_view value) override {
    if (key.size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FileStore: key of ", key.size(), " bytes; at most ", kMaxKeyBytes));
    }
    const std::string path = PathOf(key);
    const std::string tmp =
        absl::StrCat(dir_, "/.tmp.", getpid(), ".", next_tmp_++);
    base::UniqueFd fd(
        ::open(tmp.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd.valid()) return ErrnoError("FileStore: cannot create", tmp);
    // close() can report a write error of its own (NFS, FUSE mounts): a
    // value that did not reach the file is never renamed into place.
    std::error_code e = base::WriteFully(fd.get(), value);
    if (std::error_code closed = fd.Close(); !e) e = closed;
    if (e) {
      errno = e.value();
      absl::Status s = ErrnoError("FileStore: cannot write", tmp);
      ::unlink(tmp.c_str());
      return s;
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      absl::Status s = ErrnoError("FileStore: cannot rename into", path);
      ::unlink(tmp.c_str());
      return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(std::string_view key) override {
    return ReadFile(PathOf(key), key);
  }

  absl::StatusOr<std::string> BlockingGet(std::string_view key,
                                          absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    absl::Duration pause = absl::Milliseconds(1);
    while (true) {
      absl::StatusOr<std::string> value = Get(key);
      if (!absl::IsNotFound(value.status())) return value;
      const absl::Time now = absl::Now();
      if (now >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("FileStore: key '", absl::CHexEscape(AV(key)),
                         "' did not appear within ",
                         absl::FormatDuration(timeout), " in ", dir_));
      }
      absl::SleepFor(std::min(pause, deadline - now));
      pause = std::min(pause * 2, absl::Milliseconds(20));
    }
  }

  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> GetDirectory(
      std::string_view prefix) override {
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return ErrnoError("FileStore: cannot list", dir_);
    std::vector<std::string> keys;
    while (const dirent* entry = ::readdir(d)) {
      std::string_view name = entry->d_name;
      if (!name.starts_with("k")) continue;
      std::string key = absl::HexStringToBytes(AV(name.substr(1)));
      if (key.starts_with(prefix)) keys.push_back(std::move(key));
    }
    ::closedir(d);
    std::sort(keys.begin(), keys.end());
    std::vector<std::pair<std::string, std::string>> out;
    for (std::string& key : keys) {
      absl::StatusOr<std::string> value = Get(key);
      if (absl::IsNotFound(value.status())) continue;  // deleted meanwhile
      if (!value.ok()) return value.status();
      out.emplace_back(std::move(key), *std::move(value));
    }
    return out;
  }

  absl::Status Delete(std::string_view key) override {
    const std::string path = PathOf(key);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("FileStore: cannot delete", path);
    }
    return absl::OkStatus();
  }

 private:
  std::string PathOf(std::string_view key) const {
    return absl::StrCat(dir_, "/k", absl::BytesToHexString(AV(key)));
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path,
                                       std::string_view key) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) {
      if (errno == ENOENT) {
        return absl::NotFoundError(absl::StrCat(
            "FileStore: no key '", absl::CHexEscape(AV(key)), "' in ", dir_));
      }
      return ErrnoError("FileStore: cannot open", path);
    }
    std::string value;
    char chunk[8192];
    while (true) {
      const ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n < 0) {
        if (errno == EINTR) continue;
        absl::Status s = ErrnoError("FileStore: cannot read", path);
        ::close(fd);
        return s;
      }
      if (n == 0) break;
      value.append(chunk, static_cast<size_t>(n));
    }
    ::close(fd);
    return value;
  }

  const std::string dir_;
  std::atomic<uint64_t> next_tmp_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<job::KeyValueStore>> OpenFileStore(
    const std::string& dir) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("OpenFileStore: empty folder path");
  }
  // Every rank makes the shared folder at once, maybe on a bucket.
  std::string part;
  if (std::error_code e = base::MakeDirectories(dir, &part)) {
    errno = e.value();
    return ErrnoError("OpenFileStore: cannot create", part);
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("OpenFileStore: ", dir, " is not a folder"));
  }
  return std::unique_ptr<job::KeyValueStore>(new FileStore(dir));
}

}  // namespace podscope::runtime
