// The units of work of one step on every rank's tracks, shared by the
// critical path (analysis_critical_path.cc) and its what-if re-timing
// (analysis_what_if.cc). Private to viewer/core.
#ifndef PODSCOPE_VIEWER_CORE_SRC_CRITICAL_PATH_UNITS_H_
#define PODSCOPE_VIEWER_CORE_SRC_CRITICAL_PATH_UNITS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::cp {

struct Unit {
  int64_t start = 0, end = 0;  // clipped to the step's window
  EventRef event;
};

struct TrackUnits {
  size_t rank = 0;  // index in StepBreakdown::ranks
  TrackId track = 0;
  bool device = false;
  std::vector<Unit> units;  // by start, not overlapping
};

// The step's window over all ranks: [first start, last end); empty when
// no rank has the step.
std::pair<int64_t, int64_t> StepWindow(const StepBreakdown& steps, int row);

// Every rank's threads and device streams with their units in [w0, w1):
// on the thread that holds the rank's step slices, the direct children of
// the step; elsewhere the outermost slices. Empty slices carry no time and
// are left out, as are tracks with no unit.
std::vector<TrackUnits> CollectStepTracks(const TraceStore& store,
                                          const StepBreakdown& steps, int row,
                                          int64_t w0, int64_t w1);
// The same into `tracks[0, *used)`, reusing the storage of the entries
// already there (those past `*used` are left for later calls).
void CollectStepTracks(const TraceStore& store, const StepBreakdown& steps,
                       int row, int64_t w0, int64_t w1,
                       std::vector<TrackUnits>* tracks, size_t* used);

}  // namespace podscope::viewer::cp

#endif  // PODSCOPE_VIEWER_CORE_SRC_CRITICAL_PATH_UNITS_H_
