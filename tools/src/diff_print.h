// `podscope diff`'s output: a text report or one JSON document.
#ifndef PODSCOPE_TOOLS_DIFF_PRINT_H_
#define PODSCOPE_TOOLS_DIFF_PRINT_H_

#include <string>
#include <vector>

#include "diff_gate.h"
#include "podscope/viewer/session_diff.h"

namespace podscope::tools {

// A --fail_if condition and what it found.
struct GateResult {
  DiffGate gate;
  double observed = 0;
  bool holds = false;
};

std::string DiffText(const std::string& baseline, const std::string& candidate,
                     const viewer::SessionDiff& diff,
                     const std::vector<GateResult>& gates);
std::string DiffJson(const std::string& baseline, const std::string& candidate,
                     const viewer::SessionDiff& diff,
                     const std::vector<GateResult>& gates);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_DIFF_PRINT_H_
