// Opening traces written by other profilers. Importers CONVERT a foreign
// trace (XSpace `.xplane.pb` from JAX, TensorFlow and PyTorch/XLA; Chrome
// trace JSON, Kineto's included) into ordinary podtrace files, one per host
// or rank, with metadata, tracks, clocks and arguments filled in, so that
// everything downstream (the viewer, `podscope check`, `summary`, `export`)
// works unchanged.
//
// ResolveTracePath is the one entry point the command line and the viewer
// call: it hands back a path they can open as a podtrace file or folder,
// importing into a cache when it has to. Every error names the file it is
// about. Nothing here writes beside the inputs: imports go to out_dir or to
// the cache folder.
#ifndef PODSCOPE_TRACE_FORMAT_IMPORT_H_
#define PODSCOPE_TRACE_FORMAT_IMPORT_H_

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::trace_format {

enum class SourceFormat {
  kPodtrace,
  kXSpace,
  kChromeJson /* Chrome trace JSON, incl. Kineto; plain or gzip */
};

// "podtrace", "XSpace", "Chrome trace JSON".
std::string_view SourceFormatName(SourceFormat format);

// By content (podtrace magic, gzip magic then JSON, '{' or '[' JSON, XSpace
// protobuf), falling back to the extension (.podtrace, .xplane.pb / .pb,
// .json / .json.gz); a clear error naming the file otherwise.
absl::StatusOr<SourceFormat> DetectFormat(const std::string& path);

struct ImportOptions {
  // The session id (and session folder name) of the imported files; empty:
  // the run folder's name (XProf's `plugins/profile/<run>/`), or the file's
  // name without extension.
  std::string session;
  // Called as files complete: (done, total).
  std::function<void(size_t done, size_t total)> progress;
  // Set it to stop an import: the call returns a CancelledError and leaves
  // nothing half-written in the cache.
  const std::atomic<bool>* cancel = nullptr;
  // An input that cannot be imported while others of the same run can:
  // when set, it is reported here and the rest are imported; when unset,
  // the whole import fails with that error. (A reused cache entry reports
  // its recorded failures again.)
  std::function<void(const std::string& file, const absl::Status& error)>
      on_file_error;
  // Where ResolveTracePath keeps imports; empty: $XDG_CACHE_HOME/podscope/
  // imports, else ~/.cache/podscope/imports.
  std::string cache_dir;
};

// Per format: converts the given files (all of one run/session: several
// hosts or ranks) into podtrace files under out_dir (created if needed);
// returns the paths written.
absl::StatusOr<std::vector<std::string>> ImportXSpace(
    const std::vector<std::string>& files, const std::string& out_dir,
    const ImportOptions& options);
absl::StatusOr<std::vector<std::string>> ImportChromeTrace(
    const std::vector<std::string>& files, const std::string& out_dir,
    const ImportOptions& options);

// A PATH as the CLI and viewer take it (a file or a folder): if it holds
// podtrace files, returns it unchanged; if it holds foreign traces, imports
// them into a cache folder (under $XDG_CACHE_HOME/podscope/imports or
// ~/.cache/podscope/imports, keyed by the inputs' absolute paths, sizes,
// mtimes and an importer version, reused when still valid, written
// atomically) and returns that folder. The folder holds one sub-folder per
// run (session), named after it, with one podtrace file per host or rank.
// A path that does not exist is returned unchanged (the caller reports it).
absl::StatusOr<std::string> ResolveTracePath(const std::string& path,
                                             const ImportOptions& options);

// Bumped whenever an importer's output changes, so that cached imports made
// by an older importer are not reused.
inline constexpr int kImporterVersion = 3;

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_IMPORT_H_
