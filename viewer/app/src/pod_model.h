// What the Pod panel shows, computed from a store without Qt: per rank
// (process), its steps (outermost slices whose name contains "step"), so
// that step k of every rank forms a row; per row the median step time;
// which rank is the straggler and the step that shows it; the compilations
// (slices whose name contains "compile"); and the peers of a collective
// (every slice carrying the same `collective_id` argument, on any rank).
#ifndef PODSCOPE_VIEWER_APP_POD_MODEL_H_
#define PODSCOPE_VIEWER_APP_POD_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

struct PodStep {
  EventRef event;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};

struct PodRank {
  ProcessId process = 0;
  int32_t rank = -1;           // the process index, -1 when unknown
  std::string label;           // "rank 1" or "host pid"
  std::vector<PodStep> steps;  // by start
  int64_t median_ns = 0;
};

struct PodModel {
  std::vector<PodRank> ranks;  // by rank, then process order
  size_t rows = 0;             // the most steps of any rank
  std::vector<int64_t> row_median_ns;
  // The straggler (needs two ranks), the verdict in words and the event
  // that shows it. With collectives (slices carrying `collective_id`): the
  // rank whose collectives took at least 5 % less time than the median of
  // the others' (the others waited for it), shown by the longest wait of
  // another rank. Without: the rank whose median step is at least 5 % over
  // the median of the others', shown by its slowest step.
  std::optional<size_t> straggler;
  std::string verdict;
  std::optional<EventRef> evidence;
  struct Compile {
    EventRef event;
    std::string text;  // "rank 0 · jit_compile · 12.3 ms"
  };
  std::vector<Compile> compiles;  // by start
};

PodModel BuildPodModel(const TraceStore& store);

// The slices whose `collective_id` argument equals `event`'s (the event
// itself included), by process order; empty when it has none.
std::vector<EventRef> CollectivePeers(const TraceStore& store,
                                      const EventRef& event);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_POD_MODEL_H_
