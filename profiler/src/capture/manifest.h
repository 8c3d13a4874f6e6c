// A capture's `manifest.json` (written with podscope::base::JsonWriter):
// the session, who was asked, who answered, and per worker (one line each)
// the address, outcome, file, counts and clock measurements.
// Written to a temporary file that replaces the manifest only once every
// byte is on disk, so a manifest is either complete or absent.
#ifndef PODSCOPE_PROFILER_SRC_CAPTURE_MANIFEST_H_
#define PODSCOPE_PROFILER_SRC_CAPTURE_MANIFEST_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "podscope/profiler/capture.h"

namespace podscope::profiler::internal {

// The manifest's text.
std::string ManifestJson(const CaptureOptions& options,
                         const CaptureResult& result,
                         int64_t started_realtime_ns, int64_t wall_ms);

// Writes `text` to `path` whole or not at all; the error names the path
// and the system's reason (a full disk, say).
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& text);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_MANIFEST_H_
