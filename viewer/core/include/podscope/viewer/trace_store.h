// The viewer's in-memory capture: every host file of one session, loaded in
// parallel, put on one reference clock, and stored column by column per
// track with a level-of-detail index. Qt-free; the desktop viewer and
// `podscope summary` read from it.
//
//   hosts -> processes (one per file) -> tracks (threads, device streams,
//   counters)
//
// Ids are indices: ProcessId into processes(), TrackId into tracks(), and
// both vectors are in display order (hosts by name, processes by process
// index then pid, tracks by the file's sort index). Names are ids into one
// string table for the whole store.
#ifndef PODSCOPE_VIEWER_TRACE_STORE_H_
#define PODSCOPE_VIEWER_TRACE_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/trace.pb.h"
#include "podscope/viewer/slice_columns.h"

namespace podscope::viewer {

using TrackId = uint32_t;
using ProcessId = uint32_t;
using HostId = uint32_t;
using StringId = uint32_t;

// One event of the store. For slices, `index` is the slice's position in its
// track's SliceColumns (grouped by depth, not the file's order); for
// instants, its position in time order.
struct EventRef {
  TrackId track = 0;
  trace_format::EventKind kind = trace_format::EventKind::kSlice;
  uint32_t index = 0;
  friend bool operator==(const EventRef&, const EventRef&) = default;
  friend auto operator<=>(const EventRef&, const EventRef&) = default;
};

struct TrackInfo {
  TrackId id = 0;
  ProcessId process = 0;
  uint32_t file_track_id = 0;  // the id in its file
  trace_format::proto::TrackKind kind =
      trace_format::proto::TRACK_KIND_UNSPECIFIED;
  std::string name;
  int64_t tid = 0;
  int32_t device_id = 0;
  int32_t stream_id = 0;
  std::string unit;
  int32_t sort_index = 0;
  uint64_t dropped = 0;
};

// What a process of a big session shows before its events are loaded
// (OpenOptions::detail_files): how busy it was over time and where its
// steps were, computed by reading its file once.
struct ProcessOverview {
  // Bins of bin_ns from first_ns (the store's clock): in each, the share
  // of the bin (0..255 for 0..1) that the process's busiest track spent in
  // slices. Its device streams count when it has any (a pod's question is
  // how busy the devices were), else its threads.
  int64_t first_ns = 0;
  int64_t bin_ns = 1;
  std::vector<uint8_t> busy;
  // The outermost slices of its thread tracks whose name contains "step"
  // (any case): [start, end) on the store's clock, by start.
  std::vector<std::pair<int64_t, int64_t>> steps;
  // False for an overview made from the file's index alone
  // (OpenOptions::overview_from_index): `busy` then shades the spans of the
  // file's chunks rather than its slices, and `steps` is empty until
  // TraceStore::SetOverviews puts the exact one (SummarizeProcessFile) in.
  bool exact = true;
  int64_t last_ns() const {
    return first_ns + bin_ns * static_cast<int64_t>(busy.size());
  }
  // The mean busy share (0..1) over [t0, t1), bins weighted by how much
  // of them the range covers; 0 outside the process's time.
  float BusyIn(int64_t t0, int64_t t1) const;
};

struct ProcessInfo {
  ProcessId id = 0;
  HostId host = 0;
  std::string path;
  std::string host_name;
  int64_t pid = 0;
  int32_t process_index = -1;
  int32_t process_count = 0;
  std::string session_id;
  trace_format::proto::Metadata metadata;
  // The file's clock offsets were applied: its times are on the reference
  // clock (named by reference_clock) rather than its own monotonic clock.
  bool clock_aligned = false;
  std::string reference_clock;
  uint64_t dropped = 0;
  uint64_t events = 0;
  std::vector<TrackId> tracks;  // display order
  // A process of a session opened as an overview: its summary, and
  // whether its events are in the store yet (TraceStore::LoadDetail).
  // Processes of a store loaded in full have no overview and detail.
  std::shared_ptr<const ProcessOverview> overview;
  bool detail = true;
  // Call stacks of the file's samples, leaf first, as function-name string
  // ids of the store.
  absl::flat_hash_map<uint32_t, std::vector<StringId>> stacks;
};

struct HostInfo {
  HostId id = 0;
  std::string name;
  std::vector<ProcessId> processes;
};

// The events of one track.
struct TrackData {
  SliceColumns slices;
  InstantColumns instants;
  CounterColumns counters;
  SampleColumns samples;
  // Rare, so kept aside, sorted by (kind, index) with store indices and
  // store string ids.
  std::vector<trace_format::EventArgs> args;
  std::vector<trace_format::FlowLink> flows;
  uint64_t event_count() const {
    return uint64_t{slices.size()} + instants.size() + counters.size() +
           samples.size();
  }
};

// A file that could not be loaded, or was loaded only in part.
struct LoadProblem {
  std::string path;
  std::string message;
  // False: nothing of the file is in the store. True: what could be read is
  // (a file whose writer died, or with damaged records).
  bool loaded = false;
  uint64_t file_bytes = 0;
  uint64_t skipped_bytes = 0;
};

// A session folder of a logdir.
struct SessionInfo {
  std::string name;  // the folder's name
  std::string path;
  size_t files = 0;
  int64_t modified_ns = 0;  // the newest file's modification time
};

struct OpenProgress {
  size_t files_done = 0;
  size_t files_total = 0;
  uint64_t events_loaded = 0;
};

struct OpenOptions {
  // Files loaded at once; 0: one per hardware thread.
  int threads = 0;
  // Called from loading threads (one call at a time) as chunks and files
  // complete.
  std::function<void(const OpenProgress&)> progress;
  // Set it to stop loading: Open then returns a CancelledError.
  const std::atomic<bool>* cancel = nullptr;
  // Put each file on the reference clock named by its clock offsets.
  bool align_clocks = true;
  // For a logdir: the session folder to load (its name); empty loads the
  // newest one.
  std::string session;
  // A session of more files than this opens as an overview: every process
  // with its ProcessOverview and metadata, and no events until
  // TraceStore::LoadDetail asks for them. 0 (the default, what analyses
  // need): always load everything. The desktop viewer uses 64.
  size_t detail_files = 0;
  // With detail_files: each overview comes from its file's index, without
  // decoding an event (ProcessOverview::exact is false), so that a pod's
  // session opens in the time it takes to read a thousand indexes; the
  // exact overviews can follow (SummarizeProcessFile, SetOverviews).
  bool overview_from_index = false;
  // When not empty: load exactly these trace files as one session (each
  // path as given, no import), rather than what `path` names. For reading
  // a big session a host at a time.
  std::vector<std::string> files;
};

class TraceStore {
 public:
  // `path` is a .podtrace file, a session folder holding .podtrace files,
  // or a logdir whose sub-folders are sessions. An error when nothing
  // could be loaded at all (no such path, no trace file, every file bad);
  // otherwise the files that failed are listed in problems().
  static absl::StatusOr<std::unique_ptr<TraceStore>> Open(
      const std::string& path, const OpenOptions& options = {});

  // The session folders found under a logdir (newest last); one entry for
  // a session folder or a single file.
  static absl::StatusOr<std::vector<SessionInfo>> ListSessions(
      const std::string& path);

  const std::vector<SessionInfo>& sessions() const { return sessions_; }
  const SessionInfo& session() const { return session_; }
  const std::vector<HostInfo>& hosts() const { return hosts_; }
  const std::vector<ProcessInfo>& processes() const { return processes_; }
  const std::vector<TrackInfo>& tracks() const { return tracks_; }
  const TrackData& data(TrackId id) const { return *data_[id]; }
  const std::vector<LoadProblem>& problems() const { return problems_; }

  // Opened as an overview (OpenOptions::detail_files): processes whose
  // `detail` is false have no tracks yet.
  bool is_overview() const { return overview_; }
  // Reads the files of `processes` in full and adds their tracks and
  // events (in parallel on `threads`, 0: one per hardware thread).
  // Processes already loaded are skipped. Must not run while anything
  // else reads the store (the viewer calls it on its GUI thread). An error
  // names a file that can no longer be read; the others are loaded.
  absl::Status LoadDetail(const std::vector<ProcessId>& processes,
                          int threads = 0);
  // Replaces the overviews of processes not loaded yet (those made from
  // their indexes by the exact ones). The same rule as LoadDetail: nothing
  // else may read the store meanwhile.
  void SetOverviews(
      const std::vector<
          std::pair<ProcessId, std::shared_ptr<const ProcessOverview>>>&
          overviews);
  // Events of the session's files, loaded or not (equals event_count()
  // when everything is loaded).
  uint64_t session_event_count() const;

  std::string_view str(StringId id) const {
    return id < strings_.size() ? std::string_view(strings_[id])
                                : std::string_view();
  }
  size_t string_count() const { return strings_.size(); }
  // The id of `s`, if any event uses it.
  std::optional<StringId> FindString(std::string_view s) const;

  uint64_t event_count() const { return event_count_; }
  uint64_t slice_count() const;
  // First and last time of any event (reference clock when aligned);
  // {0, 0} when empty.
  int64_t first_ns() const { return first_ns_; }
  int64_t last_ns() const { return last_ns_; }
  // Every process with events was aligned.
  bool all_clocks_aligned() const;

  // Approximate bytes the events and indexes hold.
  size_t resident_bytes() const;

  // The other ends of the flows of an event (any track, any process: flow
  // ids are matched across the whole store).
  struct FlowEnd {
    uint64_t flow_id = 0;
    trace_format::FlowPhase phase = trace_format::FlowPhase::kBegin;
    EventRef event;
  };
  std::vector<FlowEnd> Flows(const EventRef& event) const;
  // The arguments of an event (store string ids), or nullptr.
  const trace_format::EventArgs* FindArgs(const EventRef& event) const;

  // Start and duration of an event (instants: duration 0).
  int64_t StartOf(const EventRef& e) const;
  int64_t DurationOf(const EventRef& e) const;
  StringId NameOf(const EventRef& e) const;

  TraceStore(const TraceStore&) = delete;
  TraceStore& operator=(const TraceStore&) = delete;
  ~TraceStore();

 private:
  friend class StoreLoader;
  friend class StoreAppender;  // grows a followed store (trace_follower.h)
  TraceStore() = default;

  std::vector<SessionInfo> sessions_;
  SessionInfo session_;
  std::vector<HostInfo> hosts_;
  std::vector<ProcessInfo> processes_;
  std::vector<TrackInfo> tracks_;
  std::vector<std::unique_ptr<TrackData>> data_;
  std::vector<LoadProblem> problems_;
  std::vector<std::string> strings_;
  absl::flat_hash_map<std::string, StringId> string_ids_;
  // flow id -> every event that carries it.
  absl::flat_hash_map<uint64_t,
                      std::vector<std::pair<EventRef, trace_format::FlowPhase>>>
      flows_;
  bool overview_ = false;
  bool align_clocks_ = true;
  uint64_t event_count_ = 0;
  int64_t first_ns_ = 0;
  int64_t last_ns_ = 0;
};

// The exact overview of one trace file (every event read once), on the
// reference clock when `align_clocks`; what TraceStore::Open makes for a
// process of an overview unless OpenOptions::overview_from_index. Stops
// early with a CancelledError when `cancel` becomes true.
absl::StatusOr<std::shared_ptr<const ProcessOverview>> SummarizeProcessFile(
    const std::string& path, bool align_clocks,
    const std::atomic<bool>* cancel = nullptr);

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_TRACE_STORE_H_
