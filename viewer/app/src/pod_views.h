// The Pod panel's analysis tables beside the step table: where each rank's
// step time went (AnalyzeSteps' categories), the top work by self time
// (AnalyzeTopWork), the op profile against the machine's roofline
// (AnalyzeOps) and each device's memory peak with the buffers live at it
// (AnalyzeMemory), as rows of text. A row that has a place on the timeline
// names it: an event to zoom to, or a time range. Qt-free.
#ifndef PODSCOPE_VIEWER_APP_POD_VIEWS_H_
#define PODSCOPE_VIEWER_APP_POD_VIEWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

struct PodView {
  std::string title;  // the tab
  std::string note;   // what the table says, one sentence
  std::vector<std::string> columns;
  struct Row {
    std::vector<std::string> cells;  // one per column
    std::optional<EventRef> event;   // show this event, else
    int64_t t0 = 0, t1 = 0;          // this range when t1 > t0
  };
  std::vector<Row> rows;
};

// "Time", "Top work", "Op profile" and "Memory", each present even when
// empty (its note then says why).
std::vector<PodView> BuildPodViews(const TraceStore& store,
                                   const StepBreakdown& steps);

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_POD_VIEWS_H_
