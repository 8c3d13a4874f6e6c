// RecoveryReport: what a reader could not use, and its one wording.
#include "absl/strings/str_cat.h"
#include "podscope/base/human_format.h"
#include "podscope/trace_format/reader.h"

namespace podscope::trace_format {

uint64_t RecoveryReport::skipped_bytes() const {
  uint64_t total = 0;
  for (const SkippedRange& r : skipped) total += r.bytes;
  return total;
}

std::string RecoveryReport::Describe() const {
  if (intact()) return "intact";
  std::string out;
  if (!has_index) {
    out = "not closed: no index, read by scanning";
  } else if (!index_problem.empty()) {
    out =
        absl::StrCat("index unusable (", index_problem, "), read by scanning");
  }
  if (!skipped.empty()) {
    const uint64_t bytes = skipped_bytes();
    if (!out.empty()) out += "; ";
    absl::StrAppend(&out, base::FormatCount(bytes), " bytes skipped in ",
                    base::FormatCount(skipped.size()), " damaged range",
                    skipped.size() == 1 ? "" : "s", " (");
    if (bytes >= 1024) absl::StrAppend(&out, base::FormatBytes(bytes), " ");
    absl::StrAppend(&out, "of ", base::FormatBytes(file_bytes), ")");
  }
  return out;
}

}  // namespace podscope::trace_format
