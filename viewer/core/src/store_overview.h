// The summary of one trace file for a session opened as an overview
// (TraceStore's ProcessOverview): its chunks decoded once, each track's
// slices swept for the time they cover, the outermost step slices kept,
// and the events dropped.
#ifndef PODSCOPE_VIEWER_CORE_SRC_STORE_OVERVIEW_H_
#define PODSCOPE_VIEWER_CORE_SRC_STORE_OVERVIEW_H_

#include <atomic>
#include <cstdint>

#include "podscope/trace_format/reader.h"
#include "podscope/viewer/clock_mapper.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::internal {

// Bins of an overview over the file's time span.
inline constexpr size_t kOverviewBins = 4096;

// `clock`: the file's mapper to the store's clock, or null to keep its
// own. `*events` receives the file's event count. Stops early (with what
// it has) when `cancel` becomes true.
ProcessOverview SummarizeTrace(const trace_format::TraceReader& reader,
                               ClockMapper* clock,
                               const std::atomic<bool>* cancel,
                               uint64_t* events);

}  // namespace podscope::viewer::internal

#endif  // PODSCOPE_VIEWER_CORE_SRC_STORE_OVERVIEW_H_
