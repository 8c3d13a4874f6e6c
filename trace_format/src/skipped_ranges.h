// Internal to trace_format: keeping a recovery report's skipped ranges one
// per stretch of damage, however many records the stretch holds.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_SKIPPED_RANGES_H_
#define PODSCOPE_TRACE_FORMAT_SRC_SKIPPED_RANGES_H_

#include <vector>

#include "podscope/trace_format/record_io.h"

namespace podscope::trace_format {

// Adds `range` to `ranges` (sorted by offset, none touching another),
// merging it with the ranges it touches or overlaps. The merged range keeps
// the reason of the one that starts first. Work logarithmic in the ranges
// when it merges or lands at the end, linear otherwise.
void AddSkippedRange(std::vector<SkippedRange>* ranges, SkippedRange range);

// Sorts `ranges` by offset and merges those that touch or overlap.
void MergeSkippedRanges(std::vector<SkippedRange>* ranges);

// The reason as shown to a user: a merged range says how many more
// records it covers.
std::string DescribeSkipped(const SkippedRange& range);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_SRC_SKIPPED_RANGES_H_
