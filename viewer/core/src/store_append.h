// Grows a TraceStore in place (a friend of it): processes, hosts and tracks
// added as files and track records appear, strings interned, and a track's
// new events merged into its columns. Used by TraceFollower; the events
// given are already on the store's clock with store string ids.
#ifndef PODSCOPE_VIEWER_CORE_SRC_STORE_APPEND_H_
#define PODSCOPE_VIEWER_CORE_SRC_STORE_APPEND_H_

#include <string>
#include <string_view>

#include "podscope/trace_format/events.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

class StoreAppender {
 public:
  static TraceStore* NewStore(const std::string& path);
  static StringId Intern(TraceStore* store, std::string_view s);
  // A process for a file: under the host of its name (added when new), in
  // the host's list by (process index, pid, path).
  static ProcessId AddProcess(TraceStore* store, ProcessInfo info);
  static ProcessInfo& process(TraceStore* store, ProcessId id) {
    return store->processes_[id];
  }
  static TrackInfo& track(TraceStore* store, TrackId id) {
    return store->tracks_[id];
  }
  // A new empty track of `info.process`, placed in its process's list by
  // sort index (after tracks of the same index).
  static TrackId AddTrack(TraceStore* store, TrackInfo info);
  // Moves a track within its process's list after its sort index changed.
  static void Resort(TraceStore* store, TrackId id);
  // Merges `events` (reader order, store string ids, store clock) into the
  // track. Returns the events added.
  static uint64_t Append(TraceStore* store, TrackId id,
                         trace_format::TrackEvents events);
  // Empties a track (its file is read again from the start).
  static void Clear(TraceStore* store, TrackId id);
  static void SetProblems(TraceStore* store, std::vector<LoadProblem> p) {
    store->problems_ = std::move(p);
  }
  static void SetSession(TraceStore* store, SessionInfo session) {
    store->session_ = session;
    store->sessions_ = {std::move(session)};
  }
  // Recomputes what spans the whole store: event count, time span, flows.
  static void Finish(TraceStore* store);
};

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_CORE_SRC_STORE_APPEND_H_
