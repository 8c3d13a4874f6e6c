// How the analyses' figures read, written once so that `podscope analyze`
// and the viewer's Pod panel print the same text for the same number.
//
// Contract:
// - FormatShare(0.1234) is "12.3%" (one decimal, no rounding to 100%
//   below it beyond printf's).
// - FormatShareOf(part, whole) is FormatShare(part / whole), or "-" when
//   whole is not positive.
// - RankLabel(steps, i) is "rank R" for the i-th rank of the breakdown
//   (R its job rank), "-" for an index outside it.
// - StragglerVerdict(steps, report) is the one sentence that `podscope
//   analyze`, `podscope summary` and the Pod panel state about who the
//   others wait for (docs/analysis.md, "The straggler verdict"):
//     "rank 2 is the straggler: the others waited 4.58 s for it, at most
//     1.03 s for any other rank (p = 0.0004 over 12 steps); longer on it
//     than on the others: forward (+1.20 s); ranks wait 6.5–10.5% of
//     step time in collectives; last to arrive: rank 2 ×120, rank 1 ×114,
//     rank 0 ×104; worst wait 186 ms at all_reduce #8, step 0"
//   (a collective id "<communicator>#<n>" reads "<name> #<n>"),
//   or "No consistent straggler: rank 0 caused the most waiting, ..." with
//   the same evidence; "No collectives joined across ranks: no straggler
//   to name" for several ranks without any; "" for one rank.
// Sizes use base::FormatBytes, durations the tools' and viewer's own
// duration formats.
#ifndef PODSCOPE_VIEWER_ANALYSIS_LABELS_H_
#define PODSCOPE_VIEWER_ANALYSIS_LABELS_H_

#include <cstdint>
#include <string>

#include "podscope/viewer/pod_analysis.h"

namespace podscope::viewer {

std::string FormatShare(double share);
std::string FormatShareOf(int64_t part, int64_t whole);
std::string RankLabel(const StepBreakdown& steps, int index);
std::string StragglerVerdict(const StepBreakdown& steps,
                             const StragglerReport& report);

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_ANALYSIS_LABELS_H_
