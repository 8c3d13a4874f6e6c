// What makes a slice a training step, for every analysis, the overview of
// a large session and `podscope summary` alike.
//
// Contract: without step numbers in its arguments, a slice is a step when
// its name contains "step" in any letter case ("train_step", "Step 12",
// "StepMarker").
#ifndef PODSCOPE_VIEWER_STEP_NAMES_H_
#define PODSCOPE_VIEWER_STEP_NAMES_H_

#include <string_view>

#include "podscope/base/strings.h"

namespace podscope::viewer {

inline bool IsStepName(std::string_view name) {
  return base::ContainsIgnoreCase(name, "step");
}

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_STEP_NAMES_H_
