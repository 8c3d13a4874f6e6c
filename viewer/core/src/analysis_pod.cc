// AnalyzePod: every pod analysis over one store, in dependency order.
#include "podscope/viewer/pod_analysis.h"

namespace podscope::viewer {

PodAnalysis AnalyzePod(const TraceStore& store,
                       const PodAnalysisOptions& options) {
  PodAnalysis out;
  out.steps = AnalyzeSteps(store, options);
  out.stragglers = AnalyzeStragglers(store, out.steps, options);
  out.compiles = AnalyzeCompiles(store, out.steps, options);
  out.top = AnalyzeTopWork(store, out.steps, options);
  out.ops = AnalyzeOps(store, options);
  out.memory = AnalyzeMemory(store, options);
  for (const HostInfo& h : store.hosts()) out.host_names.push_back(h.name);
  out.processes = store.processes().size();
  out.events = store.event_count();
  out.first_ns = store.first_ns();
  return out;
}

}  // namespace podscope::viewer
