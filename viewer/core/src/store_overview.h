// The summary of one trace file for a session opened as an overview
// (TraceStore's ProcessOverview): its chunks decoded once, each track's
// slices swept for the time they cover, the outermost step slices kept,
// and the events dropped.
#ifndef PODSCOPE_VIEWER_CORE_SRC_STORE_OVERVIEW_H_
#define PODSCOPE_VIEWER_CORE_SRC_STORE_OVERVIEW_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "podscope/trace_format/reader.h"
#include "podscope/viewer/clock_mapper.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::internal {

// Appends a sorted run to a sorted column, merging only where they overlap:
// a chunk's parents that were written in the next chunk land a few events
// back, so this is linear for a recorder's files.
template <typename T, typename Less>
void AppendRun(std::vector<T>* out, std::vector<T>&& run, Less less) {
  if (run.empty()) return;
  const size_t old = out->size();
  out->insert(out->end(), run.begin(), run.end());
  if (old == 0 || !less((*out)[old], (*out)[old - 1])) return;
  auto from =
      std::upper_bound(out->begin(), out->begin() + old, (*out)[old], less);
  std::inplace_merge(from, out->begin() + old, out->end(), less);
}

// Bins of an overview over the file's time span.
inline constexpr size_t kOverviewBins = 4096;

// The overview of a file from its index alone, without decoding a chunk:
// per bin, the share of it that the chunks of the busiest counted track
// span (where the process recorded work, at the granularity of its chunks),
// and no steps; `exact` is false. nullopt when a chunk's ranges are not
// known (a file without its index): then only decoding tells.
std::optional<ProcessOverview> SummarizeIndex(
    const trace_format::TraceReader& reader, ClockMapper* clock,
    uint64_t* events);

// `clock`: the file's mapper to the store's clock, or null to keep its
// own. `*events` receives the file's event count. Stops early (with what
// it has) when `cancel` becomes true.
ProcessOverview SummarizeTrace(const trace_format::TraceReader& reader,
                               ClockMapper* clock,
                               const std::atomic<bool>* cancel,
                               uint64_t* events);

}  // namespace podscope::viewer::internal

#endif  // PODSCOPE_VIEWER_CORE_SRC_STORE_OVERVIEW_H_
