// Follows trace files while they are written: a session folder whose
// `.podtrace` files grow (a capture in progress, or processes recording
// with StartTrace), or one such file. Each Refresh() reads only what
// arrived since the last one: new files become new processes (and hosts),
// new complete chunks of a growing file are decoded and appended to the
// store (new events, tracks and strings), and a file that was closed (it
// ends with its index) is final and not read again. The store is the same
// TraceStore the viewer shows, growing in place, so Refresh must not run
// while anything else reads the store (the viewer calls it on its GUI
// thread between paints).
//
// Cost of a refresh: reopening each file that changed size (mapping it and
// walking its record headers), decoding the chunks that arrived, and, per
// track that received slices, rebuilding that track's slice columns (their
// depth-grouped layout cannot grow in place); instants, samples and
// strings are appended. Clock offsets that arrive while a file grows (a
// job's processes add them as they go) place the events that come after
// them; a file is read again from its start when it first gets offsets
// and when it is closed with offsets other than those its events were
// placed with (a capture writes them at its end), so the final store
// equals the files loaded at once.
#ifndef PODSCOPE_VIEWER_TRACE_FOLLOWER_H_
#define PODSCOPE_VIEWER_TRACE_FOLLOWER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

struct FollowOptions {
  // Put each file on the reference clock named by its clock offsets.
  bool align_clocks = true;
};

// What one Refresh found.
struct FollowUpdate {
  uint64_t events_added = 0;
  size_t files_added = 0;     // files seen for the first time
  size_t files_finished = 0;  // files that became final in this refresh
  size_t files_reread = 0;    // files read again (their clock changed)
  bool changed() const {
    return events_added > 0 || files_added > 0 || files_finished > 0 ||
           files_reread > 0;
  }
};

class TraceFollower {
 public:
  // `path`: a session folder (it may be empty or not exist yet) or one
  // `.podtrace` file. Nothing is read until the first Refresh.
  explicit TraceFollower(std::string path, FollowOptions options = {});
  ~TraceFollower();
  TraceFollower(const TraceFollower&) = delete;
  TraceFollower& operator=(const TraceFollower&) = delete;

  // Reads what arrived. An error only when `path` exists and is neither a
  // folder nor a file; files that cannot be read yet (a header not yet
  // written) are tried again next time, files that are not traces are
  // listed in the store's problems().
  absl::StatusOr<FollowUpdate> Refresh();

  // The store, growing with each Refresh; shared with the viewer's panels.
  std::shared_ptr<const TraceStore> store() const { return store_; }
  const std::string& path() const { return path_; }
  size_t file_count() const { return files_.size(); }
  // Every file seen so far is closed (and at least one was seen).
  bool all_final() const;

 private:
  struct File;
  friend class FileRefresh;  // reads one File (trace_follower.cc)
  absl::Status ReadFile(File* file, FollowUpdate* update);

  std::string path_;
  FollowOptions options_;
  std::shared_ptr<TraceStore> store_;
  std::vector<std::unique_ptr<File>> files_;
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_TRACE_FOLLOWER_H_
