#include "src/capture/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
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
  if (options.worker_writes || options.relay) {
    j.Field("mode", "worker_writes");
  }
  if (options.by_steps) {
    j.Field("first_step", options.first_step)
        .Field("last_step", options.last_step);
  }
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
    if (!w.protocol.empty()) j.Field("protocol", w.protocol);
    if (!w.producer.empty()) j.Field("producer", w.producer);
    if (!w.error.empty()) j.Field("error", w.error);
    if (!w.notes.empty()) {
      j.Key("notes").BeginArray();
      for (const std::string& note : w.notes) j.String(note);
      j.EndArray();
    }
    if (!w.host.empty()) j.Field("host", w.host).Field("pid", w.pid);
    if (!w.path.empty()) {
      j.Field("file", std::filesystem::path(w.path).filename().string());
    }
    if (w.written_by_worker) {
      j.Field("written_by", "worker");
      if (!w.relayed_by.empty()) j.Field("relayed_by", w.relayed_by);
      j.Field("crc32", w.crc32)
          .Field("file_seen", w.file_seen)
          .Field("clock_source", w.job_clock ? "job" : "capture client");
      if (w.start_at_ns != 0) j.Field("start_at_ns", w.start_at_ns);
      j.Field("window_start_ns", w.window_start_ns)
          .Field("window_end_ns", w.window_end_ns);
    }
    if (!w.xplane_path.empty()) j.Field("xplane", w.xplane_path);
    if (w.start_timestamp_ns != 0) {
      j.Field("start_timestamp_ns", w.start_timestamp_ns);
    }
    if (!w.alignment.empty()) {
      // -1: no bound is known (wallclock).
      j.Field("alignment", w.alignment)
          .Field("alignment_uncertainty_ns", w.alignment_uncertainty_ns)
          .Field("alignment_relative_uncertainty_ns",
                 w.alignment_relative_uncertainty_ns);
      if (!w.alignment_note.empty()) {
        j.Field("alignment_note", w.alignment_note);
      }
    }
    // What the worker did: answered with a complete file, failed (with the
    // reason), or was never reached.
    j.Field("outcome", w.ok                 ? "ok"
                       : w.protocol.empty() ? "not reached"
                                            : "failed");
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

absl::Status WriteFileAtomically(int dir_fd, const std::string& dir,
                                 const std::string& name,
                                 const std::string& text) {
  const std::string tmp_name = name + ".tmp";
  const std::string tmp = absl::StrCat(dir, "/", tmp_name);
  const std::string path = absl::StrCat(dir, "/", name);
  // A temporary file left by a capture that died is replaced; a link
  // planted there is removed, never written through.
  if (::unlinkat(dir_fd, tmp_name.c_str(), 0) != 0 && errno != ENOENT) {
    return Errno("replace", tmp);
  }
  base::UniqueFd fd(
      ::openat(dir_fd, tmp_name.c_str(),
               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return Errno("create", tmp);
  absl::Status status;
  size_t done = 0;
  while (done < text.size() && status.ok()) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      status = Errno("write", tmp);
      break;
    }
    done += static_cast<size_t>(n);
  }
  // 1. The text on disk; a full disk may only show here.
  if (status.ok() && ::fsync(fd.get()) != 0) status = Errno("write", tmp);
  // 2. close() can report a write error of its own (NFS, FUSE mounts).
  if (std::error_code e = fd.Close(); e && status.ok()) {
    errno = e.value();
    status = Errno("write", tmp);
  }
  // 3. Into place.
  if (status.ok() &&
      ::renameat(dir_fd, tmp_name.c_str(), dir_fd, name.c_str()) != 0) {
    status = Errno("write", path);
  }
  if (!status.ok()) {
    ::unlinkat(dir_fd, tmp_name.c_str(), 0);
    return status;
  }
  // 4. The rename (and the workers' file names) survive a crash.
  if (std::error_code e = base::SyncDirectory(dir_fd)) {
    errno = e.value();
    return Errno("sync the folder of", path);
  }
  return absl::OkStatus();
}

}  // namespace podscope::profiler::internal
