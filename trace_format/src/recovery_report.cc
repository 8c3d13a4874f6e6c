// RecoveryReport: what a reader could not use, and its one wording.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "podscope/base/human_format.h"
#include "podscope/trace_format/reader.h"
#include "skipped_ranges.h"

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

namespace {

uint64_t End(const SkippedRange& r) { return r.offset + r.bytes; }

// Merges `later` (which starts no earlier than `into` and touches it).
void Absorb(SkippedRange* into, const SkippedRange& later) {
  into->bytes = std::max(End(*into), End(later)) - into->offset;
  into->count += later.count;
}

}  // namespace

void AddSkippedRange(std::vector<SkippedRange>* ranges, SkippedRange range) {
  auto& v = *ranges;
  auto next = std::upper_bound(
      v.begin(), v.end(), range.offset,
      [](uint64_t offset, const SkippedRange& r) { return offset < r.offset; });
  if (next != v.begin() && End(*std::prev(next)) >= range.offset) {
    // Into the range before it, which may now reach those after it.
    auto into = std::prev(next);
    Absorb(&*into, range);
    auto last = next;
    while (last != v.end() && last->offset <= End(*into)) {
      Absorb(&*into, *last);
      ++last;
    }
    v.erase(next, last);
    return;
  }
  if (next != v.end() && next->offset <= End(range)) {
    // The range after it now starts here, for this range's reason.
    auto last = next;
    while (last != v.end() && last->offset <= End(range)) {
      Absorb(&range, *last);
      ++last;
    }
    *next = std::move(range);
    v.erase(std::next(next), last);
    return;
  }
  v.insert(next, std::move(range));
}

void MergeSkippedRanges(std::vector<SkippedRange>* ranges) {
  auto& v = *ranges;
  std::stable_sort(v.begin(), v.end(),
                   [](const SkippedRange& a, const SkippedRange& b) {
                     return a.offset < b.offset;
                   });
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (out > 0 && End(v[out - 1]) >= v[i].offset) {
      Absorb(&v[out - 1], v[i]);
    } else {
      if (out != i) v[out] = std::move(v[i]);
      ++out;
    }
  }
  v.resize(out);
}

std::string DescribeSkipped(const SkippedRange& range) {
  if (range.count <= 1) return range.reason;
  return absl::StrCat(
      range.reason, " (and ", base::FormatCount(range.count - 1),
      " more damaged stretch", range.count == 2 ? "" : "es",
      " or unusable record", range.count == 2 ? "" : "s", " in this range)");
}

}  // namespace podscope::trace_format
