// Record sinks: a file written through the kernel, and a string.
#include <fcntl.h>
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
    buffer_.append(bytes);
    if (buffer_.size() >= (1u << 20)) return WriteBuffer();
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
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::InternalError(
            absl::StrCat("write ", path_, ": ", std::strerror(errno)));
      }
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
    return absl::OkStatus();
  }

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

std::unique_ptr<RecordSink> MakeStringSink(std::string* out) {
  return std::make_unique<StringSink>(out);
}

}  // namespace podscope::trace_format
