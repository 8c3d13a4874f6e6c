#include "critical_path_print.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/human_format.h"

namespace podscope::tools {

using viewer::CriticalPath;
using viewer::PathSegment;
using viewer::StepBreakdown;

int DefaultCriticalPathRow(const StepBreakdown& steps) {
  int best = -1;
  int64_t longest = -1;
  for (size_t r = steps.rows.size() > 1 ? 1 : 0; r < steps.rows.size(); ++r) {
    for (const viewer::StepCell& c : steps.rows[r].ranks) {
      if (c.present && c.duration_ns > longest) {
        longest = c.duration_ns;
        best = static_cast<int>(r);
      }
    }
  }
  return best;
}

int RowOfStep(const StepBreakdown& steps, int64_t step) {
  for (size_t r = 0; r < steps.rows.size(); ++r) {
    if (steps.rows[r].step == step) return static_cast<int>(r);
  }
  return -1;
}

std::string CriticalPathText(const StepBreakdown& steps,
                             const CriticalPath& path) {
  using base::FormatDuration;
  std::string out = absl::StrFormat(
      "\nCritical path of step %d: %s over a step window of %s\n", path.step,
      FormatDuration(path.length_ns()),
      FormatDuration(path.end_ns - path.start_ns));
  if (path.segments.empty()) return out + "  (no events in the step)\n";
  absl::StrAppendFormat(&out, "  %-6s %-22s %-44s %10s %10s  %s\n", "rank",
                        "track", "what", "at", "for", "");
  // Consecutive segments on one track are one line: how many units, and
  // the longest of them (--json lists every segment).
  const auto& seg = path.segments;
  for (size_t i = 0; i < seg.size();) {
    size_t j = i + 1;
    while (j < seg.size() && seg[j].rank == seg[i].rank &&
           seg[j].track == seg[i].track && seg[j].note.empty() &&
           seg[i].note.empty()) {
      ++j;
    }
    size_t longest = i, units = 0;
    for (size_t k = i; k < j; ++k) {
      if (seg[k].category == viewer::StepCategory::kIdle) continue;
      ++units;
      if (seg[longest].category == viewer::StepCategory::kIdle ||
          seg[k].duration_ns() > seg[longest].duration_ns()) {
        longest = k;
      }
    }
    std::string what = seg[longest].name;
    if (units > 1) {
      what = absl::StrCat(units, " units, longest ", what, " ",
                          FormatDuration(seg[longest].duration_ns()));
    }
    absl::StrAppendFormat(
        &out, "  %-6d %-22s %-44s %10s %10s  %s\n", seg[i].rank,
        seg[i].track_name.substr(0, 22), what.substr(0, 44),
        "+" + FormatDuration(seg[i].start_ns - path.start_ns),
        FormatDuration(seg[j - 1].end_ns - seg[i].start_ns), seg[i].note);
    i = j;
  }
  out += "  by category:";
  const double total =
      static_cast<double>(std::max<int64_t>(path.length_ns(), 1));
  for (int c = 0; c < viewer::kStepCategoryCount; ++c) {
    const int64_t ns = path.by_category[c];
    if (ns == 0) continue;
    absl::StrAppendFormat(
        &out, " %s %s (%.0f %%)",
        std::string(
            viewer::StepCategoryName(static_cast<viewer::StepCategory>(c))),
        FormatDuration(ns), 100.0 * static_cast<double>(ns) / total);
  }
  out += "\n  by rank:";
  for (size_t r = 0; r < path.by_rank.size() && r < steps.ranks.size(); ++r) {
    if (path.by_rank[r] == 0) continue;
    absl::StrAppendFormat(&out, " rank %d %s", steps.ranks[r].rank,
                          FormatDuration(path.by_rank[r]));
  }
  return out + "\n";
}

void CriticalPathJson(const StepBreakdown& steps, const CriticalPath& path,
                      base::JsonWriter& j) {
  j.BeginObject();
  j.Field("step", path.step).Field("start_ns", path.start_ns);
  j.Field("end_ns", path.end_ns).Field("length_ns", path.length_ns());
  j.Key("segments").BeginArray();
  for (const PathSegment& s : path.segments) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("rank", s.rank).Field("track", s.track_name);
    j.Field("name", s.name);
    j.Field("category", viewer::StepCategoryName(s.category));
    j.Field("start_ns", s.start_ns).Field("duration_ns", s.duration_ns());
    if (!s.note.empty()) j.Field("note", s.note);
    j.EndObject();
  }
  j.EndArray();
  j.Key("by_category_ns").BeginObject();
  for (int c = 0; c < viewer::kStepCategoryCount; ++c) {
    j.Field(viewer::StepCategoryName(static_cast<viewer::StepCategory>(c)),
            path.by_category[c]);
  }
  j.EndObject();
  j.Key("by_rank_ns").BeginArray();
  for (size_t r = 0; r < path.by_rank.size() && r < steps.ranks.size(); ++r) {
    j.BeginObject(base::JsonLayout::kOneLine);
    j.Field("rank", steps.ranks[r].rank).Field("ns", path.by_rank[r]);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

std::string WhatIfText(const viewer::WhatIf& change, int64_t step,
                       const viewer::WhatIfResult& r) {
  using base::FormatDuration;
  const double pct =
      r.modelled_ns > 0
          ? 100.0 * static_cast<double>(r.changed_ns - r.modelled_ns) /
                static_cast<double>(r.modelled_ns)
          : 0;
  std::string out = absl::StrFormat(
      "\nWhat if %s: step %d would take %s instead of %s (%+.1f %%; %d units "
      "changed).\n",
      change.text, step, FormatDuration(r.changed_ns),
      FormatDuration(r.modelled_ns), pct, r.units_changed);
  if (r.modelled_ns != r.step_ns) {
    absl::StrAppendFormat(&out,
                          "  (the model re-times the step as recorded to %s "
                          "against %s measured: the trace has dependencies "
                          "it does not see)\n",
                          FormatDuration(r.modelled_ns),
                          FormatDuration(r.step_ns));
  }
  return out;
}

std::string WithWhatIfJson(std::string json, const viewer::WhatIf& change,
                           const viewer::WhatIfResult& r) {
  const size_t close = json.rfind('}');
  if (close == std::string::npos) return json;
  std::string member;
  base::JsonWriter j(&member, base::JsonLayout::kOneLine);
  j.BeginObject();
  j.Field("spec", change.text).Field("step_ns", r.step_ns);
  j.Field("modelled_ns", r.modelled_ns).Field("changed_ns", r.changed_ns);
  j.Field("units_changed", r.units_changed);
  j.EndObject();
  json.insert(close, ",\n  \"what_if\": " + member + "\n");
  return json;
}

}  // namespace podscope::tools
