// Names that come from a peer or a file (a worker's host, a session id, a
// producer or device name) become parts of paths only through
// SafeFileComponent, and files and folders named by them are made with the
// helpers below, which never follow a link planted at the name and never
// replace a file that is already there.
//
// Contract of SafeFileComponent(name): the result is one file-name
// component, the same for the same input, whatever the input holds:
//   - bytes other than ASCII letters, digits and `. _ - + @ : = ,` become
//     '_' (so no '/', '\\', NUL, control byte, space or non-ASCII byte);
//   - a leading '.' or '-' gets a '_' in front (no ".", "..", hidden file
//     or name that reads as an option);
//   - an empty name becomes "unnamed";
//   - at most kMaxFileComponentBytes bytes: a longer one keeps its first
//     bytes and ends with '-' and 16 hex digits of a hash of the whole
//     input, so long names that differ late stay apart.
// Different inputs may map to one result ("a/b" and "a_b"): whoever
// creates the file resolves that clash with CreateFileExclusive's suffix.
#ifndef PODSCOPE_BASE_FILE_NAMES_H_
#define PODSCOPE_BASE_FILE_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <system_error>

namespace podscope::base {

inline constexpr size_t kMaxFileComponentBytes = 96;

std::string SafeFileComponent(std::string_view name);

// True when SafeFileComponent(name) == name: a name a user typed that can
// be used as it is (a session folder), else the caller says what is wrong.
bool IsSafeFileComponent(std::string_view name);

// Creates folder `path` and its missing parents (mode 0755 before umask).
// A mkdir that fails while the folder exists by then is success: another
// process made it meanwhile, or a bucket mounted through FUSE answers
// EACCES or EEXIST for a folder another writer just made. The error names
// the first part of the path that could not be made.
std::error_code MakeDirectories(const std::string& path,
                                std::string* failed_part = nullptr);

// The same with the mkdir call given (tests give one that fails the way a
// bucket does).
using MkdirFunction = int (*)(const char* path, unsigned mode);
std::error_code MakeDirectoriesWith(const std::string& path, MkdirFunction mk,
                                    std::string* failed_part = nullptr);

// An owned file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now and reports close()'s failure (a delayed write error on
  // some filesystems), which the destructor cannot.
  std::error_code Close();

 private:
  int fd_ = -1;
};

// Opens folder `path` (not through a link at its last component) for the
// *at calls and for SyncDirectory.
std::error_code OpenDirectory(const std::string& path, UniqueFd* out);

// Creates a new file in folder `dir_fd` named `stem + ext`, or
// `stem.1 + ext`, `stem.2 + ext`, ... when that name is taken, with
// O_EXCL | O_NOFOLLOW | O_CLOEXEC: never opens an existing file or a link
// planted at the name. `stem` must be a safe component. Sets `*name` to
// the name chosen.
std::error_code CreateFileExclusive(int dir_fd, std::string_view stem,
                                    std::string_view ext, UniqueFd* out,
                                    std::string* name);

// Renames `from` (in `dir_fd`) to a name that does not exist yet, chosen
// as CreateFileExclusive does, without ever replacing an existing entry.
std::error_code RenameToFreshName(int dir_fd, const std::string& from,
                                  std::string_view stem, std::string_view ext,
                                  std::string* name);

// Writes all of `bytes` to `fd`, resuming after short writes and
// interruptions.
std::error_code WriteFully(int fd, std::string_view bytes);

// Makes the names created, renamed or removed in a folder durable.
std::error_code SyncDirectory(int dir_fd);

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_FILE_NAMES_H_
