#include "src/server/worker_file.h"

#include <unistd.h>
#include <zlib.h>

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/trace_format/format.h"

namespace podscope::profiler::internal {
namespace {

class CountingSink : public trace_format::RecordSink {
 public:
  CountingSink(std::unique_ptr<trace_format::RecordSink> file,
               std::shared_ptr<WorkerFileState> state)
      : file_(std::move(file)), state_(std::move(state)) {}

  absl::Status Append(std::string_view bytes) override {
    absl::Status s = file_->Append(bytes);
    if (!s.ok()) return s;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      // zlib takes at most 4 GiB at a time.
      std::string_view rest = bytes;
      while (!rest.empty()) {
        const size_t n = std::min<size_t>(rest.size(), 1u << 30);
        state_->crc32 = static_cast<uint32_t>(
            crc32(state_->crc32, reinterpret_cast<const Bytef*>(rest.data()),
                  static_cast<uInt>(n)));
        rest.remove_prefix(n);
      }
    }
    state_->bytes.fetch_add(bytes.size(), std::memory_order_relaxed);
    return absl::OkStatus();
  }
  absl::Status Flush(bool sync) override { return file_->Flush(sync); }
  absl::Status Close() override { return file_->Close(); }

 private:
  std::unique_ptr<trace_format::RecordSink> file_;
  std::shared_ptr<WorkerFileState> state_;
};

}  // namespace

absl::StatusOr<WorkerFile> CreateWorkerFile(const std::string& root,
                                            const std::string& session,
                                            const std::string& stem) {
  // The root is the configuration's: it must exist, it is never made.
  base::UniqueFd root_fd;
  if (std::error_code e = base::OpenDirectory(root, &root_fd)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the capture root ", root, " cannot be opened: ", e.message()));
  }
  const std::string dir = absl::StrCat(root, "/", session);
  std::string failed_part;
  if (std::error_code e = base::MakeDirectories(dir, &failed_part)) {
    return absl::InternalError(
        absl::StrCat("cannot create ", failed_part, ": ", e.message()));
  }
  // Never through a link: a session folder swapped for a link does not
  // lead outside the root.
  base::UniqueFd dir_fd;
  if (std::error_code e = base::OpenDirectory(dir, &dir_fd)) {
    return absl::InternalError(
        absl::StrCat("cannot open ", dir, " as a folder: ", e.message()));
  }
  base::UniqueFd fd;
  std::string name;
  if (std::error_code e =
          base::CreateFileExclusive(dir_fd.get(), base::SafeFileComponent(stem),
                                    trace_format::kFileExtension, &fd, &name)) {
    return absl::InternalError(
        absl::StrCat("cannot create a file in ", dir, ": ", e.message()));
  }
  WorkerFile out;
  out.dir = dir;
  out.state = std::make_shared<WorkerFileState>();
  out.relative_path = absl::StrCat(session, "/", name);
  const std::string path = absl::StrCat(dir, "/", name);
  out.sink = std::make_unique<CountingSink>(
      trace_format::AdoptFileSink(fd.release(), path), out.state);
  return out;
}

void SyncWorkerFolder(const std::string& dir) {
  base::UniqueFd fd;
  if (!base::OpenDirectory(dir, &fd)) (void)base::SyncDirectory(fd.get());
}

void RemoveWorkerFile(const std::string& root,
                      const std::string& relative_path) {
  if (relative_path.empty()) return;
  const std::string path = absl::StrCat(root, "/", relative_path);
  ::unlink(path.c_str());
}

}  // namespace podscope::profiler::internal
