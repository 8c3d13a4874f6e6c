// A file's track as the store describes it (TrackInfo without its store id,
// process or drop count), shared by the loader and the follower.
#ifndef PODSCOPE_VIEWER_CORE_SRC_DESCRIBE_TRACK_H_
#define PODSCOPE_VIEWER_CORE_SRC_DESCRIBE_TRACK_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/reader.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

// The track record `id` of `reader` (kind, name, tid, device and stream,
// unit, sort index); "track N" when it has no record or no name.
inline TrackInfo DescribeTrack(const trace_format::TraceReader& reader,
                               uint32_t id) {
  TrackInfo info;
  info.file_track_id = id;
  if (const trace_format::proto::Track* t = reader.FindTrack(id)) {
    info.kind = t->kind();
    info.name = t->name();
    info.tid = t->tid();
    info.device_id = t->device_id();
    info.stream_id = t->stream_id();
    info.unit = t->unit();
    info.sort_index = t->sort_index();
  }
  if (info.name.empty()) info.name = absl::StrCat("track ", id);
  return info;
}

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_CORE_SRC_DESCRIBE_TRACK_H_
