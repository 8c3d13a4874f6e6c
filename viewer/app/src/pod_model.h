// What the Pod panel shows, from viewer/core's pod analyses
// (pod_analysis.h: AnalyzeSteps, AnalyzeStragglers, AnalyzeCompiles) put in
// the panel's terms: a column per rank, a row per step (matched across
// ranks by number or order), the row's median step time, the straggler
// verdict with the worst wait, the compilations; and the
// peers of a collective (every slice carrying the same `collective_id`
// argument, on any rank). Qt-free.
#ifndef PODSCOPE_VIEWER_APP_POD_MODEL_H_
#define PODSCOPE_VIEWER_APP_POD_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pod_views.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

struct PodStep {
  bool present = false;  // the rank has this step
  EventRef event;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
};

struct PodRank {
  ProcessId process = 0;
  int32_t rank = -1;           // the process index, -1 when unknown
  std::string label;           // "rank 1" or "host pid"
  std::vector<PodStep> steps;  // one per row
  int64_t median_ns = 0;
};

struct PodModel {
  std::vector<PodRank> ranks;  // by rank, then process order
  size_t rows = 0;
  std::vector<int64_t> row_step;  // each row's step number (or position)
  std::vector<int64_t> row_median_ns;
  // The rank the others waited for in collectives (AnalyzeStragglers), and
  // the verdict in words (StragglerVerdict: the sentence `podscope
  // analyze` and `podscope summary` state). The evidence is the worst wait
  // the verdict names: the last arrival at that collective, and the
  // collective's span on every rank, [first arrival, last end).
  std::optional<size_t> straggler;
  std::string verdict;
  std::optional<EventRef> evidence;
  int64_t evidence_start_ns = 0;
  int64_t evidence_end_ns = 0;
  struct Compile {
    EventRef event;
    std::string text;  // "rank 0 · step 3 · 12.3 ms · missed (late) …"
  };
  std::vector<Compile> compiles;  // by start
  // The other analyses as tables (pod_views.h).
  std::vector<PodView> views;
  // What a step's critical path is computed from (critical_path.h), on
  // demand when a step is shown.
  std::shared_ptr<const StepBreakdown> steps;
  std::shared_ptr<const StragglerReport> stragglers;
};

PodModel BuildPodModel(const TraceStore& store);

// The slices whose `collective_id` argument equals `event`'s (the event
// itself included), by process order; empty when it has none.
std::vector<EventRef> CollectivePeers(const TraceStore& store,
                                      const EventRef& event);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_POD_MODEL_H_
