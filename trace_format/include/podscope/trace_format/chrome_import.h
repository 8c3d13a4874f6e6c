// Imports Chrome trace JSON (the Trace Event Format, as chrome://tracing,
// Perfetto and PyTorch's profiler / Kineto write it), plain or gzipped, by
// converting each file into a podtrace file written with TraceWriter, so
// that every tool reads it as a capture of its own.
//
// Contract:
// * The files given together are one session: each becomes one podtrace
//   file (one process); a Kineto file's distributedInfo.rank is its
//   process index and world_size the process count, otherwise files are
//   numbered in the order given.
// * Files are parsed as streams (the text is held a block and an event at
//   a time, whatever the size; what grows is the state kept to the end,
//   such as Kineto's correlation ids, see docs/interop.md); timestamps
//   (microseconds, with fractions) keep nanosecond precision.
// * Malformed input is an error naming the file and the byte offset (in
//   the uncompressed text); nothing is left under `out_dir` for a file
//   that failed. What is converted differently or not at all (unmatched
//   B/E, unknown phases, overlapping slices) is reported as warnings and in
//   each file's metadata attribute "import.warnings".
#ifndef PODSCOPE_TRACE_FORMAT_CHROME_IMPORT_H_
#define PODSCOPE_TRACE_FORMAT_CHROME_IMPORT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::trace_format {

struct ChromeImportOptions {
  // The session id written into every file; empty: derived from the
  // inputs' names.
  std::string session_id;
  // Called now and then with (input bytes read, input bytes in all).
  std::function<void(uint64_t, uint64_t)> progress;
  // Called as each file is done (imported or reported): (files done, files).
  std::function<void(size_t, size_t)> files_done;
  // Set to true (from any thread) to stop; the import returns Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // When set, a file that cannot be imported is reported here (and leaves
  // nothing behind) while the others are imported; when unset, the first
  // such error fails the whole import.
  std::function<void(const std::string& file, const absl::Status& error)>
      on_file_error;
};

struct ChromeImportResult {
  std::vector<std::string> paths;     // the podtrace files written
  std::vector<std::string> warnings;  // prefixed with the input's name
  uint64_t events = 0;
};

// Converts `files` (one session) into podtrace files under `out_dir`
// (created if missing).
absl::StatusOr<ChromeImportResult> ImportChromeJsonFiles(
    const std::vector<std::string>& files, const std::string& out_dir,
    const ChromeImportOptions& options = {});

// Converts one document held in memory into the podtrace file
// `out_path`; `name` is used in messages. For tests and fuzzing.
absl::StatusOr<ChromeImportResult> ImportChromeJsonBuffer(
    std::string_view data, const std::string& name,
    const std::string& out_path);

// True when `head` (the first bytes of a file, gzip already undone) looks
// like a JSON document: optional BOM and whitespace, then '{' or '['.
bool LooksLikeJson(std::string_view head);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_CHROME_IMPORT_H_
