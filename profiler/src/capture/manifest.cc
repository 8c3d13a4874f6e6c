#include "src/capture/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "podscope/base/json.h"

namespace podscope::profiler::internal {
namespace {

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

std::string ManifestJson(const CaptureOptions& options,
                         const CaptureResult& result,
                         int64_t started_realtime_ns, int64_t wall_ms) {
  std::string text;
  base::JsonWriter j(&text, base::JsonLayout::kPretty);
  j.BeginObject().Field("session", result.session);
  if (!options.job.empty()) j.Field("job", options.job);
  j.Field("duration_ms", options.duration_ms)
      .Field("started_realtime_ns", started_realtime_ns)
      .Field("wall_ms", wall_ms)
      .Field("reference_clock", "CLOCK_MONOTONIC of the capture client")
      .Field("asked", result.workers.size())
      .Field("answered", result.answered());
  j.Key("workers").BeginArray();
  for (const WorkerResult& w : result.workers) {
    // One line per worker.
    j.BeginObject(base::JsonLayout::kOneLine);
    if (w.rank >= 0) j.Field("rank", w.rank);
    j.Field("address", w.address).Field("ok", w.ok);
    if (!w.error.empty()) j.Field("error", w.error);
    if (!w.host.empty()) j.Field("host", w.host).Field("pid", w.pid);
    if (!w.path.empty()) {
      j.Field("file", std::filesystem::path(w.path).filename().string());
    }
    j.Field("bytes", w.bytes)
        .Field("events", w.events)
        .Field("dropped", w.dropped);
    j.Key("clock").BeginArray();
    for (const ClockEstimate& c : w.clock) {
      j.BeginObject()
          .Field("local_ns", c.local_ns)
          .Field("offset_ns", c.offset_ns)
          .Field("uncertainty_ns", c.uncertainty_ns)
          .Field("round_trip_ns", c.round_trip_ns)
          .EndObject();
    }
    j.EndArray()
        .Field("clock_probes", w.clock_probes)
        .Field("clock_probes_discarded", w.clock_probes_discarded)
        .Field("drift_ppm", w.drift_ppm)
        .EndObject();
  }
  j.EndArray().EndObject();
  return text;
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create", tmp);
  absl::Status status;
  size_t done = 0;
  while (done < text.size() && status.ok()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      status = Errno("write", tmp);
      break;
    }
    done += static_cast<size_t>(n);
  }
  // A full disk may only show when the data reaches it.
  if (status.ok() && ::fsync(fd) != 0) status = Errno("write", tmp);
  if (::close(fd) != 0 && status.ok()) status = Errno("write", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = Errno("write", path);
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

}  // namespace podscope::profiler::internal
