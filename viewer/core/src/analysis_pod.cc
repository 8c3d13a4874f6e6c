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
  return out;
}

}  // namespace podscope::viewer
