#include "pod_model.h"

#include <algorithm>
#include <variant>

#include "absl/strings/str_cat.h"
#include "podscope/base/numeric.h"
#include "podscope/viewer/analysis_labels.h"
#include "podscope/viewer/pod_analysis.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace tf = trace_format;

PodModel BuildPodModel(const TraceStore& store) {
  PodModel m;
  const StepBreakdown steps = AnalyzeSteps(store);
  const StragglerReport stragglers = AnalyzeStragglers(store, steps);
  const CompileReport compiles = AnalyzeCompiles(store, steps);
  m.views = BuildPodViews(store, steps);
  auto label = [&](int rank) { return RankLabel(steps, rank); };
  m.rows = steps.rows.size();
  for (size_t i = 0; i < steps.ranks.size(); ++i) {
    PodRank r;
    r.process = steps.ranks[i].process;
    r.rank = steps.ranks[i].rank;
    r.label = label(static_cast<int>(i));
    if (i < steps.totals.size()) r.median_ns = steps.totals[i].median_ns;
    for (const StepRow& row : steps.rows) {
      PodStep s;
      if (i < row.ranks.size() && row.ranks[i].present) {
        const StepCell& c = row.ranks[i];
        s = {true, c.event, c.start_ns, c.duration_ns};
      }
      r.steps.push_back(s);
    }
    m.ranks.push_back(std::move(r));
  }
  for (const StepRow& row : steps.rows) {
    std::vector<int64_t> present;
    for (const StepCell& c : row.ranks) {
      if (c.present) present.push_back(c.duration_ns);
    }
    m.row_step.push_back(row.step);
    m.row_median_ns.push_back(base::Median(present));
  }

  if (const auto& s = stragglers.straggler; s && s->rank >= 0) {
    m.straggler = static_cast<size_t>(s->rank);
  }
  m.verdict = StragglerVerdict(steps, stragglers);
  if (stragglers.worst_wait >= 0) {
    const JoinedCollective& worst =
        stragglers.collectives[stragglers.worst_wait];
    m.evidence_start_ns = INT64_MAX;
    m.evidence_end_ns = INT64_MIN;
    for (const CollectiveArrival& a : worst.arrivals) {
      if (!m.evidence || a.rank == worst.last_rank) m.evidence = a.event;
      m.evidence_start_ns = std::min(m.evidence_start_ns, a.start_ns);
      m.evidence_end_ns = std::max(
          m.evidence_end_ns, base::SaturatingAdd(a.start_ns, a.duration_ns));
    }
  }

  m.steps = std::make_shared<const StepBreakdown>(steps);
  m.stragglers = std::make_shared<const StragglerReport>(stragglers);
  for (const CompileEvent& c : compiles.compiles) {
    std::string text = absl::StrCat(label(c.rank));
    if (c.step >= 0) absl::StrAppend(&text, " · step ", c.step);
    absl::StrAppend(&text, " · ", FormatDuration(c.duration_ns));
    if (c.cache_hit.has_value()) {
      absl::StrAppend(&text, *c.cache_hit ? " · cache hit" : " · missed");
    }
    if (c.late) absl::StrAppend(&text, " (late)");
    if (!c.changes.empty()) absl::StrAppend(&text, " · ", c.changes.front());
    m.compiles.push_back({c.event, std::move(text)});
  }
  return m;
}

std::vector<EventRef> CollectivePeers(const TraceStore& store,
                                      const EventRef& event) {
  std::vector<EventRef> out;
  const auto key = store.FindString("collective_id");
  if (!key) return out;
  auto id_of = [&](const tf::EventArgs& a) -> std::optional<uint64_t> {
    for (const tf::Arg& arg : a.args) {
      if (arg.key != *key) continue;
      if (const auto* s = std::get_if<tf::StringId>(&arg.value)) return s->id;
      if (const auto* i = std::get_if<int64_t>(&arg.value)) {
        return static_cast<uint64_t>(*i) | (uint64_t{1} << 63);
      }
    }
    return std::nullopt;
  };
  const tf::EventArgs* mine = store.FindArgs(event);
  if (mine == nullptr) return out;
  const auto id = id_of(*mine);
  if (!id) return out;
  for (const TrackInfo& t : store.tracks()) {
    for (const tf::EventArgs& a : store.data(t.id).args) {
      if (a.kind != tf::EventKind::kSlice) continue;
      if (id_of(a) == id) out.push_back({t.id, a.kind, a.index});
    }
  }
  return out;
}

}  // namespace podscope::viewer::app
