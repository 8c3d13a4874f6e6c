// The facts `podscope summary` prints about a capture: its hosts, processes
// and tracks, the time it spans on the (aligned) reference clock, dropped
// events, and which event names took the most time. Kept free of Qt and of
// any output format so that the viewer and other tools compute exactly the
// same numbers.
#ifndef PODSCOPE_TOOLS_SUMMARY_H_
#define PODSCOPE_TOOLS_SUMMARY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/trace.pb.h"
#include "podscope/viewer/slice_time_stats.h"

namespace podscope::tools {

// Time statistics of all slices that share a name, over files (whose string
// ids differ, hence the name itself).
struct SliceNameStats : viewer::SliceTimeStats {
  std::string name;
};

// Accumulates SliceNameStats over tracks of any number of files.
class NameStatsTable {
 public:
  // Adds the slices of one track (in reader order); `name_of` resolves the
  // file's string ids.
  void AddTrack(std::span<const trace_format::Slice> slices,
                const std::function<std::string_view(uint32_t)>& name_of);

  // By total time, longest first (ties by name); at most `limit` entries,
  // all when `limit` is 0.
  std::vector<SliceNameStats> Top(size_t limit) const;
  size_t size() const { return by_name_.size(); }

 private:
  absl::flat_hash_map<std::string, SliceNameStats> by_name_;
};

struct TrackSummary {
  uint32_t id = 0;
  trace_format::proto::TrackKind kind =
      trace_format::proto::TRACK_KIND_UNSPECIFIED;
  std::string name;
  uint64_t slices = 0;
  uint64_t instants = 0;
  uint64_t counters = 0;
  uint64_t samples = 0;
  uint64_t dropped = 0;
  uint64_t events() const { return slices + instants + counters + samples; }
};

// "thread", "device stream", "counter" or "unspecified".
std::string_view TrackKindName(trace_format::proto::TrackKind kind);

// What one process did per training step and how long it waited in
// collectives. Steps are the outermost slices on thread tracks whose name
// contains "step" (as the viewer's step table takes them), each lasting
// until the device work its launches reached has finished (summary_steps.h:
// the analyses' step windows); a collective is a
// device-stream slice with a `wait_ns` argument (the runtime records this
// rank's arrival to the last rank's arrival there).
struct RankActivity {
  uint64_t steps = 0;
  int64_t step_total_ns = 0;
  int64_t step_median_ns = 0;
  int64_t step_max_ns = 0;
  uint64_t collectives = 0;
  int64_t collective_ns = 0;       // time inside collectives
  int64_t collective_wait_ns = 0;  // of which waiting for the last rank
};

// The collectives the SPMD partitioner inserted (runtime/spmd.h), from the
// "spmd_collective" slices of one process: one row per sharding change.
struct SpmdCollectiveSummary {
  std::string kind;    // all_gather, all_reduce, reduce_scatter
  std::string reason;  // "fc2.weight: ('data', 'model') -> ... for dot"
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t bytes = 0;      // per call, per device
  int64_t min_bytes = 0;  // the least the sharding change requires
};

// Adds one thread track's spmd_collective slices to `rows` (by reason).
void AddSpmdCollectives(const trace_format::TraceReader& reader,
                        const trace_format::TrackEvents& events,
                        std::vector<SpmdCollectiveSummary>* rows);

// One file, which is one process of the capture.
struct ProcessSummary {
  std::string path;
  std::string host;
  int64_t pid = 0;
  int32_t process_index = -1;  // -1: unknown
  int32_t process_count = 0;   // 0: unknown
  std::string session_id;
  std::vector<std::string> command_line;
  std::vector<TrackSummary> tracks;  // in the file's order
  uint64_t events = 0;
  uint64_t dropped = 0;
  // The file has offsets to a reference clock (and they were applied unless
  // alignment was turned off).
  bool has_clock_offsets = false;
  std::string reference_clock;  // as named by the offsets, may be empty
  // With offsets: the first measured offset to the reference clock, its
  // uncertainty, and the drift the measurements show (0 with one).
  int64_t clock_offset_ns = 0;
  int64_t clock_uncertainty_ns = 0;
  double clock_drift_ppm = 0;
  // How a capture lined up a host that has no clock probe (an XProf
  // worker): "wallclock", "rpc" or "collectives", the bound on the
  // offset's error (-1: not known) and on its error relative to the other
  // hosts of a collective fit, and why no stronger method was used.
  std::string clock_alignment;
  int64_t clock_alignment_uncertainty_ns = -1;
  int64_t clock_alignment_relative_uncertainty_ns = -1;
  std::string clock_alignment_note;
  // First and last event, on the reference clock when aligned.
  bool has_events = false;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  // What the reader could not use (a file whose writer died or that was
  // damaged is summarised from what was recovered).
  trace_format::RecoveryReport recovery;
  bool recovered() const { return !recovery.intact(); }
  RankActivity activity;
  std::vector<SpmdCollectiveSummary> spmd_collectives;
};

struct UnreadableFile {
  std::string path;
  std::string message;
};

struct HostSummary {
  std::string name;
  size_t processes = 0;
};

struct ClockAlignment {
  bool requested = true;
  size_t files = 0;
  size_t files_with_offsets = 0;
  // Distinct non-empty reference clock names over all files.
  std::vector<std::string> references;
  // Every file was put on one reference clock, so hosts line up.
  bool aligned() const {
    return requested && files > 0 && files_with_offsets == files &&
           references.size() <= 1;
  }
};

struct TraceSummary {
  std::vector<ProcessSummary> processes;  // sorted by path
  std::vector<UnreadableFile> unreadable;
  std::vector<HostSummary> hosts;  // sorted by name
  uint64_t total_events = 0;
  uint64_t total_dropped = 0;
  bool has_events = false;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  // Wall-clock time of the first event, when its file has clock snapshots.
  std::optional<int64_t> first_realtime_ns;
  ClockAlignment clocks;
  std::vector<SliceNameStats> top_names;
  size_t distinct_names = 0;
  // For a job of several ranks (two or more processes with steps or
  // collectives) read by SummarizePath: viewer/core's straggler verdict
  // (StragglerVerdict over AnalyzeSteps and AnalyzeStragglers), the same
  // sentence `podscope analyze` and the viewer's Pod panel state; "" for
  // one rank. `straggler_rank` is the process index of the rank it names,
  // -1 for none.
  std::string verdict;
  int32_t straggler_rank = -1;
  int64_t duration_ns() const { return has_events ? last_ns - first_ns : 0; }
};

struct SummaryOptions {
  // Apply each file's clock offsets (as the Chrome export does).
  bool align_clocks = true;
  // How many names to keep in top_names; 0 keeps all.
  size_t top_names = 15;
  // Threads to decode chunks on (0: all cores).
  int threads = 0;
  // Called after each file with (files done, files in all).
  std::function<void(size_t, size_t)> progress;
};

// Summarises files already opened; `unreadable` lists those that could not
// be opened, to report them beside the rest.
TraceSummary Summarize(
    std::span<const trace_format::TraceReader* const> readers,
    std::vector<UnreadableFile> unreadable, const SummaryOptions& options = {});

// Opens every trace under `path` (a file, or a folder searched recursively)
// and summarises them. An error when `path` does not exist or holds no
// trace file; files that cannot be opened are listed in `unreadable`.
absl::StatusOr<TraceSummary> SummarizePath(const std::string& path,
                                           const SummaryOptions& options = {});

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_SUMMARY_H_
