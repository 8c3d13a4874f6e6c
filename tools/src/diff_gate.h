// `podscope diff --fail_if`: a condition on one figure of a diff, e.g.
// `step_ms.median > +5%`, `op:conv2d > +2ms and p<0.01`, `recompiles.new >
// 0`. The figure's change from the baseline is compared: relative with
// `%`, absolute with a time unit (ns, us, ms, s); counts (recompiles.*)
// take a plain number. An optional `p<X` also requires that the change's
// p-value be below X.
#ifndef PODSCOPE_TOOLS_DIFF_GATE_H_
#define PODSCOPE_TOOLS_DIFF_GATE_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "podscope/viewer/session_diff.h"

namespace podscope::tools {

struct DiffGate {
  enum class Op { kGreater, kGreaterEqual, kLess, kLessEqual };
  enum class Unit { kPercent, kNanoseconds, kCount };
  std::string text;    // as given
  std::string figure;  // e.g. "step_ms.median"
  Op op = Op::kGreater;
  double threshold = 0;  // a fraction for kPercent (5 % -> 0.05), else ns
  Unit unit = Unit::kPercent;
  std::optional<double> max_p;
};

absl::StatusOr<DiffGate> ParseDiffGate(std::string_view text);

// Whether the condition holds on `diff`; the change it compared, in the
// gate's unit, goes to *observed. NotFound when the diff has no such
// figure (the error lists what there is).
absl::StatusOr<bool> GateHolds(const DiffGate& gate,
                               const viewer::SessionDiff& diff,
                               double* observed);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_DIFF_GATE_H_
