// Record sinks: a file written through the kernel, and a string.
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {
namespace {

class FileSink : public RecordSink {
 public:
  FileSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSink() override { (void)Close(); }

  absl::Status Append(std::string_view bytes) override {
    // A large record goes to the kernel as it is, behind what is buffered,
    // instead of through a copy into the buffer.
    if (bytes.size() >= kDirectBytes && fd_ >= 0) {
      absl::Status s = WriteAll(buffer_, bytes);
      if (s.ok()) buffer_.clear();
      return s;
    }
    buffer_.append(bytes);
    if (buffer_.size() >= kBufferBytes) return WriteBuffer();
    return absl::OkStatus();
  }
  absl::Status Flush(bool sync) override {
    if (auto s = WriteBuffer(); !s.ok()) return s;
    if (sync && fd_ >= 0 && fdatasync(fd_) != 0) {
      return absl::InternalError(
          absl::StrCat("fdatasync ", path_, ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    absl::Status s = WriteBuffer();
    if (::close(fd_) != 0 && s.ok()) {
      s = absl::InternalError(
          absl::StrCat("close ", path_, ": ", std::strerror(errno)));
    }
    fd_ = -1;
    return s;
  }

 private:
  absl::Status WriteBuffer() {
    if (fd_ < 0) {
      if (buffer_.empty()) return absl::OkStatus();
      return absl::FailedPreconditionError(
          absl::StrCat(path_, " is already closed"));
    }
    absl::Status s = WriteAll(buffer_, {});
    if (s.ok()) buffer_.clear();
    return s;
  }

  // Writes `a` then `b`, resuming after short writes and interruptions.
  absl::Status WriteAll(std::string_view a, std::string_view b) {
    iovec parts[2] = {{const_cast<char*>(a.data()), a.size()},
                      {const_cast<char*>(b.data()), b.size()}};
    iovec* next = parts;
    int count = 2;
    while (count > 0) {
      if (next->iov_len == 0) {
        ++next;
        --count;
        continue;
      }
      const ssize_t n = ::writev(fd_, next, count);
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::InternalError(
            absl::StrCat("write ", path_, ": ", std::strerror(errno)));
      }
      size_t done = static_cast<size_t>(n);
      while (count > 0 && done >= next->iov_len) {
        done -= next->iov_len;
        ++next;
        --count;
      }
      if (count > 0) {
        next->iov_base = static_cast<char*>(next->iov_base) + done;
        next->iov_len -= done;
      }
    }
    return absl::OkStatus();
  }

  static constexpr size_t kBufferBytes = size_t{1} << 20;
  static constexpr size_t kDirectBytes = size_t{64} << 10;

  int fd_;
  std::string path_;
  std::string buffer_;
};

class StringSink : public RecordSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  absl::Status Append(std::string_view bytes) override {
    out_->append(bytes);
    return absl::OkStatus();
  }
  absl::Status Flush(bool) override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }

 private:
  std::string* out_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RecordSink>> OpenFileSink(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  return std::make_unique<FileSink>(fd, path);
}

std::unique_ptr<RecordSink> AdoptFileSink(int fd, std::string path) {
  return std::make_unique<FileSink>(fd, std::move(path));
}

std::unique_ptr<RecordSink> MakeStringSink(std::string* out) {
  return std::make_unique<StringSink>(out);
}

}  // namespace podscope::trace_format
