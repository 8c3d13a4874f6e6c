// `podscope analyze --critical_path`: the path of one step as text or as a
// JSON value.
#ifndef PODSCOPE_TOOLS_CRITICAL_PATH_PRINT_H_
#define PODSCOPE_TOOLS_CRITICAL_PATH_PRINT_H_

#include <string>

#include "podscope/base/json.h"
#include "podscope/viewer/critical_path.h"

namespace podscope::tools {

// The row `podscope analyze --critical_path` shows without --step: the
// slowest step (the slowest rank's window) after the first, else the
// first; -1 without steps.
int DefaultCriticalPathRow(const viewer::StepBreakdown& steps);
// The row of step number `step`, -1 when there is none.
int RowOfStep(const viewer::StepBreakdown& steps, int64_t step);

std::string CriticalPathText(const viewer::StepBreakdown& steps,
                             const viewer::CriticalPath& path);
void CriticalPathJson(const viewer::StepBreakdown& steps,
                      const viewer::CriticalPath& path, base::JsonWriter& j);

// "What if op:conv2d=-20%: step 7 would take 10.1 ms instead of 12.3 ms
// (-17.9 %) ..."
std::string WhatIfText(const viewer::WhatIf& change, int64_t step,
                       const viewer::WhatIfResult& r);
// `json` (one object) with a "what_if" member added before its end.
std::string WithWhatIfJson(std::string json, const viewer::WhatIf& change,
                           const viewer::WhatIfResult& r);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_CRITICAL_PATH_PRINT_H_
