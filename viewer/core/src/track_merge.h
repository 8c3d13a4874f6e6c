// Internal to viewer/core: one track's events gathered chunk by chunk while
// a file is read, so that each decoded chunk's columns are used again for
// the next (trace_format::TraceReader::DecodeChunkInto) and the merged
// columns of one file are used again for the next file's (TrackBuffers).
// The result is exactly what merging all the parts at the end made: the
// runs merged where they overlap when no part has arguments or flows, the
// reader's MergeTrackEvents otherwise.
#ifndef PODSCOPE_VIEWER_CORE_SRC_TRACK_MERGE_H_
#define PODSCOPE_VIEWER_CORE_SRC_TRACK_MERGE_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "podscope/trace_format/events.h"

namespace podscope::viewer::internal {

class TrackMerger {
 public:
  // Starts from `buffers` (emptied, its allocations kept). `expected` is
  // how many events the track holds, when the file's index says so (0:
  // unknown): the columns the first part uses are reserved for that many
  // at once, instead of grown by doubling, which copies the column each
  // time and holds the old and the new copy at once.
  explicit TrackMerger(trace_format::TrackEvents buffers,
                       uint64_t expected = 0);

  // Appends one chunk's part of the track (in reader order).
  void Add(const trace_format::TrackEvents& part);
  // The merged track; depths are not computed. Call once.
  trace_format::TrackEvents& Finish();

 private:
  // Where each part began in each column.
  struct RunStart {
    size_t slices, instants, counters, samples;
  };
  trace_format::TrackEvents out_;
  uint64_t expected_;
  std::vector<RunStart> runs_;
};

// Emptied TrackEvents whose columns keep their allocations, shared by the
// threads that load a session's files.
class TrackBuffers {
 public:
  // The largest held, or an empty one.
  trace_format::TrackEvents Take();
  void Give(trace_format::TrackEvents events);

 private:
  std::mutex mutex_;
  std::vector<trace_format::TrackEvents> held_;
};

}  // namespace podscope::viewer::internal

#endif  // PODSCOPE_VIEWER_CORE_SRC_TRACK_MERGE_H_
