// The critical path of a step across the job (`podscope analyze
// --critical_path`): the chain of work that set the step's length, walked
// back from the step's last event over every rank. docs/analysis.md
// defines it.
//
// The dependencies: program order on each thread and device stream (a
// track's work runs one unit after another; on a thread holding the step
// slices, the units are the step's direct children); a device op after the
// host call that launched it (a flow from a host slice to the op); and a
// collective's end after the last participant's arrival (collectives
// joined across ranks by `collective_id`, as the straggler analysis joins
// them). Walking back from the event that ends the step last, each unit's
// start is explained by whichever of its predecessors finished last: the
// previous unit on its track, its launch, or, for a collective, the rank
// that arrived last, whose work before it continues the path. A stretch
// with no work on the path's track is idle.
#ifndef PODSCOPE_VIEWER_CRITICAL_PATH_H_
#define PODSCOPE_VIEWER_CRITICAL_PATH_H_

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

struct PathSegment {
  int rank = 0;  // RankInfo::rank
  TrackId track = 0;
  std::string track_name;
  std::string name;  // the unit's name; "(idle)" for a gap
  StepCategory category = StepCategory::kIdle;
  int64_t start_ns = 0;  // the part of the unit on the path
  int64_t end_ns = 0;
  bool has_event = false;
  EventRef event;
  // E.g. "waited for rank 2 in all_reduce world#8".
  std::string note;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct CriticalPath {
  int row = -1;                       // StepBreakdown::rows index
  int64_t step = 0;                   // the row's step
  int64_t start_ns = 0, end_ns = 0;   // the step's window over all ranks
  std::vector<PathSegment> segments;  // in time order
  std::array<int64_t, kStepCategoryCount> by_category{};
  // Time on the path per rank, in the order of StepBreakdown::ranks.
  std::vector<int64_t> by_rank;
  int64_t length_ns() const {
    return segments.empty()
               ? 0
               : segments.back().end_ns - segments.front().start_ns;
  }
};

// The path of step row `row`; an empty path (no segments) when the row
// has no events.
CriticalPath AnalyzeCriticalPath(const TraceStore& store,
                                 const StepBreakdown& steps,
                                 const StragglerReport& stragglers, int row);

// AnalyzeCriticalPath of every step row, with the collectives indexed
// once and the rows spread over `threads` threads (0: one per core).
// `visit` gets each row's path once, from any of those threads, possibly
// at the same time; a caller that keeps only a summary of each path
// should use it rather than hold every path at once.
void ForEachCriticalPath(
    const TraceStore& store, const StepBreakdown& steps,
    const StragglerReport& stragglers, int threads,
    const std::function<void(int row, CriticalPath path)>& visit);

// The same, every path kept, in row order.
std::vector<CriticalPath> AnalyzeCriticalPaths(
    const TraceStore& store, const StepBreakdown& steps,
    const StragglerReport& stragglers, int threads = 1);

// What if one thing were different (`podscope analyze --what_if SPEC`):
//   op:NAME=-20%        every slice named NAME 20 % shorter (or +N % longer)
//   collectives=0       no collective waits: each ends its transfer time
//                       after its own rank arrives
//   loader:R=median     rank R's data loading as long as the ranks' median
struct WhatIf {
  enum class Kind { kOp, kNoCollectiveWait, kLoaderMedian };
  Kind kind = Kind::kOp;
  std::string name;   // kOp
  double factor = 1;  // kOp: 0.8 for -20 %
  int rank = -1;      // kLoaderMedian: RankInfo::rank
  std::string text;   // as given
};
absl::StatusOr<WhatIf> ParseWhatIf(std::string_view spec);

// The step re-timed: every unit of every rank keeps its dependencies (the
// critical path's: program order, launch, a collective's last arrival)
// and the latency it had beyond them, with the change applied to the
// units' durations (a unit holding slices of the named op is shortened by
// their share).
struct WhatIfResult {
  int64_t step_ns = 0;      // the step's window as recorded
  int64_t modelled_ns = 0;  // the model, unchanged (equals step_ns unless
                            // the trace breaks the model's rules)
  int64_t changed_ns = 0;   // the model with the change
  uint64_t units_changed = 0;
};
WhatIfResult SimulateWhatIf(const TraceStore& store, const StepBreakdown& steps,
                            const StragglerReport& stragglers, int row,
                            const WhatIf& change);

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_CRITICAL_PATH_H_
