#include "podscope/viewer/analysis_labels.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace podscope::viewer {

std::string FormatShare(double share) {
  return absl::StrFormat("%.1f%%", 100.0 * share);
}

std::string FormatShareOf(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return FormatShare(static_cast<double>(part) / static_cast<double>(whole));
}

std::string RankLabel(const StepBreakdown& steps, int index) {
  if (index < 0 || static_cast<size_t>(index) >= steps.ranks.size()) {
    return "-";
  }
  return absl::StrCat("rank ", steps.ranks[static_cast<size_t>(index)].rank);
}

}  // namespace podscope::viewer
