#include "src/capture/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace podscope::profiler::internal {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c >= 0x80) {
          // Non-ASCII bytes are escaped one by one: the manifest stays
          // valid JSON whatever a host name or error holds.
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

absl::Status Errno(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

std::string ManifestJson(const CaptureOptions& options,
                         const CaptureResult& result,
                         int64_t started_realtime_ns, int64_t wall_ms) {
  std::ostringstream j;
  j << "{\n  \"session\": " << JsonString(result.session)
    << ",\n  \"duration_ms\": " << options.duration_ms
    << ",\n  \"started_realtime_ns\": " << started_realtime_ns
    << ",\n  \"wall_ms\": " << wall_ms
    << ",\n  \"reference_clock\": \"CLOCK_MONOTONIC of the capture client\""
    << ",\n  \"asked\": " << result.workers.size()
    << ",\n  \"answered\": " << result.answered() << ",\n  \"workers\": [";
  for (size_t i = 0; i < result.workers.size(); ++i) {
    const WorkerResult& w = result.workers[i];
    j << (i ? "," : "") << "\n    {\"address\": " << JsonString(w.address)
      << ", \"ok\": " << (w.ok ? "true" : "false");
    if (!w.error.empty()) j << ", \"error\": " << JsonString(w.error);
    if (!w.host.empty()) {
      j << ", \"host\": " << JsonString(w.host) << ", \"pid\": " << w.pid;
    }
    if (!w.path.empty()) {
      j << ", \"file\": "
        << JsonString(std::filesystem::path(w.path).filename().string());
    }
    j << ", \"bytes\": " << w.bytes << ", \"events\": " << w.events
      << ", \"dropped\": " << w.dropped << ", \"clock\": [";
    for (size_t k = 0; k < w.clock.size(); ++k) {
      const ClockEstimate& c = w.clock[k];
      j << (k ? ", " : "") << "{\"local_ns\": " << c.local_ns
        << ", \"offset_ns\": " << c.offset_ns
        << ", \"uncertainty_ns\": " << c.uncertainty_ns
        << ", \"round_trip_ns\": " << c.round_trip_ns << "}";
    }
    j << "], \"drift_ppm\": " << w.drift_ppm << "}";
  }
  j << "\n  ]\n}\n";
  return j.str();
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
