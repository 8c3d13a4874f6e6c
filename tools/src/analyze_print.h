// How `podscope analyze` prints a PodAnalysis: aligned tables for people,
// or one JSON document (times in ns, shares in [0, 1]) for scripts.
#ifndef PODSCOPE_TOOLS_ANALYZE_PRINT_H_
#define PODSCOPE_TOOLS_ANALYZE_PRINT_H_

#include <cstddef>
#include <string>

#include "podscope/viewer/critical_path.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::tools {

// `top` bounds the long lists (steps, collectives, compiles) the text
// shows; 0 shows all. The JSON always holds everything the analysis kept.
std::string AnalysisText(const viewer::TraceStore& store,
                         const viewer::PodAnalysis& a, size_t top);
std::string AnalysisJson(const std::string& path,
                         const viewer::TraceStore& store,
                         const viewer::PodAnalysis& a,
                         const viewer::CriticalPath* critical_path = nullptr);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_ANALYZE_PRINT_H_
