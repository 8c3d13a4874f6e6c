// A capture's `manifest.json` (written with podscope::base::JsonWriter):
// the session, who was asked, who answered, and per worker (one line each)
// the address, outcome, file, counts and clock measurements.
// Written to a temporary file that replaces the manifest only once every
// byte is on disk, so a manifest is either complete or absent; the workers'
// files it vouches for are on disk before it is written (CaptureWorker
// syncs each).
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

// Writes `text` as file `name` of folder `dir_fd` (the folder `dir`)
// whole or not at all, in this order: the text into `<name>.tmp` (created
// anew, never through a link planted there), fsync, close, rename over
// `name`, fsync of the folder so that the rename itself survives a crash.
// The error names the path and the system's reason (a full disk, say).
absl::Status WriteFileAtomically(int dir_fd, const std::string& dir,
                                 const std::string& name,
                                 const std::string& text);

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_CAPTURE_MANIFEST_H_
