// Analyses over a TraceStore that the viewer's panels and `podscope
// summary` show: statistics over a time range, search, stack-sample flame
// graphs and the per-host step-time table.
#ifndef PODSCOPE_VIEWER_ANALYSIS_H_
#define PODSCOPE_VIEWER_ANALYSIS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/viewer/slice_time_stats.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

inline constexpr int64_t kBeginningOfTime = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kEndOfTime = std::numeric_limits<int64_t>::max();
inline constexpr HostId kAllHosts = std::numeric_limits<HostId>::max();
inline constexpr ProcessId kAllProcesses =
    std::numeric_limits<ProcessId>::max();

// ------------------------------------------------------------ statistics

struct StatsOptions {
  // Tracks to include; empty: all.
  std::vector<TrackId> tracks;
  // One row per (name, host) instead of one per name.
  bool by_host = false;
  // One row per (name, process): each rank of a host apart. Implies
  // by_host.
  bool by_process = false;
  int threads = 0;  // 0: all cores
};

// The statistics (SliceTimeStats) of the slices of one name that touch the
// range, per host when asked.
struct NameStats : SliceTimeStats {
  StringId name = 0;
  HostId host = kAllHosts;            // kAllHosts unless by_host or by_process
  ProcessId process = kAllProcesses;  // kAllProcesses unless by_process
};

// Statistics of the slices that touch [t0, t1), by total time, longest
// first (ties by name, then host).
std::vector<NameStats> RangeStats(const TraceStore& store, int64_t t0,
                                  int64_t t1, const StatsOptions& options = {});

// ---------------------------------------------------------------- search

struct SearchQuery {
  std::string text;
  bool regex = false;  // ECMAScript syntax, matched anywhere in the name
  bool case_sensitive = false;
  int64_t t0 = kBeginningOfTime;
  int64_t t1 = kEndOfTime;
  std::vector<TrackId> tracks;  // empty: all
  size_t limit = 1000;
};

struct SearchHit {
  EventRef event;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  StringId name = 0;
};

// Slices and instants whose name matches and that start in [t0, t1), in
// time order (start, then track, kind, index), at most `limit`. An error
// for an invalid regex.
absl::StatusOr<std::vector<SearchHit>> Search(const TraceStore& store,
                                              const SearchQuery& query);
// The first match after `from` (forward) or the last before it, in the same
// order, ignoring the query's time range and limit; nullopt when none.
absl::StatusOr<std::optional<SearchHit>> SearchStep(const TraceStore& store,
                                                    const SearchQuery& query,
                                                    const EventRef& from,
                                                    bool forward);

// ----------------------------------------------------------- flame graph

struct FlameNode {
  StringId name = 0;  // the root's is 0
  uint32_t parent = 0;
  uint64_t total = 0;              // samples in this frame or below
  uint64_t self = 0;               // samples with this frame as the leaf
  std::vector<uint32_t> children;  // by total, largest first
};

struct FlameGraph {
  std::vector<FlameNode> nodes;  // nodes[0] is the root
  uint64_t samples = 0;
};

// Stack samples taken in [t0, t1) on `tracks` (empty: all), merged root
// first by function name.
FlameGraph BuildFlameGraph(const TraceStore& store, int64_t t0, int64_t t1,
                           const std::vector<TrackId>& tracks = {});

// ------------------------------------------------------------ step times

struct StepOptions {
  // A slice is a step when its name contains one of these; only the
  // outermost of nested matching slices counts.
  std::vector<std::string> markers = {"step"};
  bool case_sensitive = false;
};

struct Step {
  EventRef event;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  StringId name = 0;
};

struct HostSteps {
  HostId host = 0;
  std::string host_name;
  std::vector<Step> steps;  // by start
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int64_t mean_ns() const {
    return count == 0
               ? 0
               : static_cast<int64_t>(total_ns / static_cast<int64_t>(count));
  }
};

// One entry per host that has steps, in host order.
std::vector<HostSteps> StepTable(const TraceStore& store,
                                 const StepOptions& options = {});

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_ANALYSIS_H_
