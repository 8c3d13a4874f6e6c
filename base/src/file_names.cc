#include "podscope/base/file_names.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace podscope::base {
namespace {

bool IsKeptByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
         c == '+' || c == '@' || c == ':' || c == '=' || c == ',';
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::error_code LastError() { return {errno, std::generic_category()}; }

// A name with a clash suffix: `stem + ext` for n == 0, else
// `stem.<n> + ext`.
std::string Candidate(std::string_view stem, std::string_view ext, int n) {
  std::string name(stem);
  if (n > 0) name += "." + std::to_string(n);
  name += ext;
  return name;
}

// Enough for every worker of the largest job to share one host name and
// pid; past it something is wrong and the caller hears so.
constexpr int kMaxClashSuffix = 100'000;

int SystemMkdir(const char* path, unsigned mode) {
  return ::mkdir(path, static_cast<mode_t>(mode));
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string SafeFileComponent(std::string_view name) {
  std::string out;
  out.reserve(std::min(name.size() + 1, kMaxFileComponentBytes));
  if (name.empty()) return "unnamed";
  if (name.front() == '.' || name.front() == '-') out.push_back('_');
  for (char c : name) out.push_back(IsKeptByte(c) ? c : '_');
  if (out.size() > kMaxFileComponentBytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    constexpr size_t kSuffixBytes = 17;  // '-' and 16 hex digits
    out.resize(kMaxFileComponentBytes - kSuffixBytes);
    out.push_back('-');
    const uint64_t h = Fnv1a64(name);
    for (int shift = 60; shift >= 0; shift -= 4) {
      out.push_back(kHex[(h >> shift) & 0xf]);
    }
  }
  return out;
}

bool IsSafeFileComponent(std::string_view name) {
  return SafeFileComponent(name) == name;
}

std::error_code MakeDirectoriesWith(const std::string& path, MkdirFunction mk,
                                    std::string* failed_part) {
  if (path.empty()) return std::make_error_code(std::errc::invalid_argument);
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/') continue;
    if (path[end - 1] == '/') continue;  // "a//b" or a trailing '/'
    const std::string part = path.substr(0, end);
    if (mk(part.c_str(), 0755) == 0) continue;
    const std::error_code error = LastError();
    // Made by someone else meanwhile, or a mount that refuses to make
    // what already exists: what counts is that it is a folder now.
    if (IsDirectory(part)) continue;
    if (failed_part != nullptr) *failed_part = part;
    return error;
  }
  return {};
}

std::error_code MakeDirectories(const std::string& path,
                                std::string* failed_part) {
  return MakeDirectoriesWith(path, &SystemMkdir, failed_part);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    (void)Close();
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() { (void)Close(); }

std::error_code UniqueFd::Close() {
  if (fd_ < 0) return {};
  const int fd = release();
  // Linux releases the descriptor even when close fails: never retry.
  if (::close(fd) != 0 && errno != EINTR) return LastError();
  return {};
}

std::error_code OpenDirectory(const std::string& path, UniqueFd* out) {
  const int fd =
      ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return LastError();
  *out = UniqueFd(fd);
  return {};
}

std::error_code CreateFileExclusive(int dir_fd, std::string_view stem,
                                    std::string_view ext, UniqueFd* out,
                                    std::string* name) {
  for (int n = 0; n <= kMaxClashSuffix; ++n) {
    std::string candidate = Candidate(stem, ext, n);
    const int fd =
        ::openat(dir_fd, candidate.c_str(),
                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      *out = UniqueFd(fd);
      *name = std::move(candidate);
      return {};
    }
    if (errno != EEXIST) return LastError();
  }
  return std::make_error_code(std::errc::file_exists);
}

std::error_code RenameToFreshName(int dir_fd, const std::string& from,
                                  std::string_view stem, std::string_view ext,
                                  std::string* name) {
  for (int n = 0; n <= kMaxClashSuffix; ++n) {
    std::string candidate = Candidate(stem, ext, n);
    if (::renameat2(dir_fd, from.c_str(), dir_fd, candidate.c_str(),
                    RENAME_NOREPLACE) == 0) {
      *name = std::move(candidate);
      return {};
    }
    if (errno == EEXIST) continue;
    if (errno != EINVAL && errno != ENOSYS) return LastError();
    // A filesystem without RENAME_NOREPLACE: a hard link is just as
    // exclusive, and the temporary name goes afterwards.
    if (::linkat(dir_fd, from.c_str(), dir_fd, candidate.c_str(), 0) != 0) {
      if (errno == EEXIST) continue;
      return LastError();
    }
    ::unlinkat(dir_fd, from.c_str(), 0);
    *name = std::move(candidate);
    return {};
  }
  return std::make_error_code(std::errc::file_exists);
}

std::error_code WriteFully(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return LastError();
    if (n == 0) return std::make_error_code(std::errc::no_space_on_device);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

std::error_code SyncDirectory(int dir_fd) {
  if (::fsync(dir_fd) != 0) return LastError();
  return {};
}

}  // namespace podscope::base
