// Recompiles: every Compile scope with its cache outcome, and for misses
// what changed since the nearest earlier compile (pod_analysis.h).
#include <algorithm>
#include <set>

#include "absl/strings/str_split.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"

namespace podscope::viewer {
namespace {

std::vector<std::string> Parameters(const std::string& signature) {
  std::vector<std::string> out;
  for (auto p : absl::StrSplit(signature, ' ', absl::SkipWhitespace())) {
    out.emplace_back(p.data(), p.size());
  }
  return out;
}

// `f32[256,1,28,28] i32[]` -> `f32[_,_,_,_] i32[]`.
std::string Family(const std::string& signature) {
  std::string out;
  bool in_dims = false, digit_run = false;
  for (char c : signature) {
    if (c == '[') in_dims = true;
    if (c == ']') in_dims = false;
    if (in_dims && c >= '0' && c <= '9') {
      if (!digit_run) out += '_';
      digit_run = true;
      continue;
    }
    digit_run = false;
    out += c;
  }
  return out;
}

std::string_view DtypeOf(std::string_view param) {
  const size_t b = param.find('[');
  return b == std::string_view::npos ? param : param.substr(0, b);
}

size_t Distance(const std::vector<std::string>& a,
                const std::vector<std::string>& b) {
  size_t d = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d += a[i] != b[i] ? 1 : 0;
  }
  return d;
}

// Hits, misses and late misses of one rank's compiles (out->compiles from
// `first` on), and for each miss the nearest earlier compile and what
// changed.
void JudgeRankCompiles(size_t first, const PodAnalysisOptions& options,
                       CompileReport* report) {
  CompileReport& out = *report;
  std::set<std::string> families;
  for (size_t k = first; k < out.compiles.size(); ++k) {
    CompileEvent& c = out.compiles[k];
    const bool miss = !c.cache_hit.value_or(false);
    const std::string family = Family(c.signature);
    const bool family_seen = !families.insert(family).second;
    if (!miss) {
      ++out.hits;
      continue;
    }
    ++out.misses;
    c.stall_ns = c.duration_ns;
    out.miss_ns = base::SaturatingAdd(out.miss_ns, c.duration_ns);
    c.late = c.step >= 0 ? c.step > options.warmup_steps : family_seen;
    if (c.late) ++out.late_misses;
    // The nearest earlier signature on this rank (latest on ties).
    const std::vector<std::string> params = Parameters(c.signature);
    size_t best_distance = SIZE_MAX;
    for (size_t j = first; j < k; ++j) {
      const size_t d = Distance(params, Parameters(out.compiles[j].signature));
      if (d <= best_distance) {
        best_distance = d;
        c.previous = static_cast<int>(j);
      }
    }
    if (c.previous < 0) continue;
    const CompileEvent& p = out.compiles[c.previous];
    const std::vector<std::string> before = Parameters(p.signature);
    if (before.size() != params.size()) {
      c.changes.push_back("parameters: " + std::to_string(before.size()) +
                          " -> " + std::to_string(params.size()));
    }
    // Position by position only when the parameter lists line up; a
    // different count is a different graph, said once above.
    for (size_t i = 0; before.size() == params.size() && i < params.size();
         ++i) {
      const std::string& a = before[i];
      const std::string& b = params[i];
      if (a == b) continue;
      const bool dtype = DtypeOf(a) != DtypeOf(b);
      c.changes.push_back("parameter " + std::to_string(i) +
                          (dtype ? " dtype: " : " shape: ") + a + " -> " + b);
    }
    if (p.graph_hash != c.graph_hash) {
      c.changes.push_back("graph_hash: " + p.graph_hash + " -> " +
                          c.graph_hash);
    }
    if (p.graph_ops != c.graph_ops && p.graph_ops >= 0 && c.graph_ops >= 0) {
      c.changes.push_back("graph_ops: " + std::to_string(p.graph_ops) + " -> " +
                          std::to_string(c.graph_ops));
    }
  }
}

}  // namespace

std::vector<pod::FoundCompile> pod::FindCompiles(const TraceStore& store) {
  std::vector<FoundCompile> out;
  const std::optional<StringId> compile = store.FindString("Compile");
  if (!compile) return out;
  const Keys keys(store);
  for (const ProcessInfo& p : store.processes()) {
    const size_t first = out.size();
    for (TrackId t : p.tracks) {
      const SliceColumns& s = store.data(t).slices;
      for (uint32_t i = 0; i < s.size(); ++i) {
        if (s.name(i) != *compile) continue;
        FoundCompile f;
        CompileEvent& c = f.e;
        c.rank = static_cast<int>(p.id);
        c.event = {t, trace_format::EventKind::kSlice, i};
        c.start_ns = s.start(i);
        c.duration_ns = NonNegative(s.duration(i));
        const trace_format::EventArgs* args = store.FindArgs(c.event);
        c.graph_hash =
            TextArg(store, args, keys.graph_hash).value_or(std::string());
        if (auto hit = IntArg(args, keys.cache_hit)) c.cache_hit = *hit != 0;
        if (const trace_format::Arg* a = FindArg(args, keys.signature)) {
          if (const auto* sid =
                  std::get_if<trace_format::StringId>(&a->value)) {
            c.signature = std::string(store.str(sid->id));
          }
        }
        c.graph_ops = IntArg(args, keys.graph_ops).value_or(-1);
        f.step_arg = IntArg(args, keys.step);
        out.push_back(std::move(f));
      }
    }
    std::sort(out.begin() + static_cast<ptrdiff_t>(first), out.end(),
              [](const FoundCompile& a, const FoundCompile& b) {
                if (a.e.start_ns != b.e.start_ns) {
                  return a.e.start_ns < b.e.start_ns;
                }
                return a.e.event < b.e.event;
              });
  }
  return out;
}

CompileReport pod::JudgeCompiles(const StepBreakdown& steps,
                                 std::vector<FoundCompile> found,
                                 const PodAnalysisOptions& options) {
  CompileReport out;
  const StepLocator locate(steps);
  out.compiles.reserve(found.size());
  for (size_t begin = 0; begin < found.size();) {
    size_t end = begin;
    while (end < found.size() && found[end].e.rank == found[begin].e.rank) {
      ++end;
    }
    const size_t first = out.compiles.size();
    for (size_t k = begin; k < end; ++k) {
      CompileEvent c = std::move(found[k].e);
      c.step_row = locate.Find(c.rank, c.start_ns);
      c.step = found[k].step_arg.value_or(
          c.step_row >= 0 ? steps.rows[c.step_row].step : -1);
      out.compiles.push_back(std::move(c));
    }
    JudgeRankCompiles(first, options, &out);
    begin = end;
  }
  return out;
}

CompileReport AnalyzeCompiles(const TraceStore& store,
                              const StepBreakdown& steps,
                              const PodAnalysisOptions& options) {
  std::vector<pod::FoundCompile> found = pod::FindCompiles(store);
  // A rank is a process of this store: by rank, then time.
  std::vector<int> rank_of(store.processes().size(), -1);
  for (size_t r = 0; r < steps.ranks.size(); ++r) {
    if (steps.ranks[r].process < rank_of.size()) {
      rank_of[steps.ranks[r].process] = static_cast<int>(r);
    }
  }
  std::vector<pod::FoundCompile> ranked;
  for (pod::FoundCompile& f : found) {
    const int r = rank_of[f.e.rank];
    if (r < 0) continue;
    f.e.rank = r;
    ranked.push_back(std::move(f));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const pod::FoundCompile& a, const pod::FoundCompile& b) {
                     return a.e.rank < b.e.rank;
                   });
  return pod::JudgeCompiles(steps, std::move(ranked), options);
}

}  // namespace podscope::viewer
