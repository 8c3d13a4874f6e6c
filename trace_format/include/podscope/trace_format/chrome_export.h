// Exports Podscope traces as Chrome trace JSON (the Trace Event Format),
// which Perfetto UI and chrome://tracing open.
#ifndef PODSCOPE_TRACE_FORMAT_CHROME_EXPORT_H_
#define PODSCOPE_TRACE_FORMAT_CHROME_EXPORT_H_

#include <functional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "podscope/trace_format/reader.h"

namespace podscope::trace_format {

struct ChromeExportOptions {
  // Write gzip-compressed JSON (a .json.gz that both viewers open).
  bool gzip = false;
  // Put every file on its capture's reference clock when it has clock
  // offsets, so that hosts line up.
  bool align_clocks = true;
  // Called after each track with (tracks done, tracks in all).
  std::function<void(size_t, size_t)> progress;
};

struct ChromeExportStats {
  uint64_t events = 0;
  uint64_t bytes = 0;  // written, after compression
};

// Writes one JSON document in which each file is a process and each track a
// thread. Streams track by track: memory stays bounded by the largest
// track.
absl::StatusOr<ChromeExportStats> ExportChrome(
    std::span<const TraceReader* const> readers, const std::string& out_path,
    const ChromeExportOptions& options = {});

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_CHROME_EXPORT_H_
