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

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_ANALYSIS_LABELS_H_
