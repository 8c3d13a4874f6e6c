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

}  // namespace

CompileReport AnalyzeCompiles(const TraceStore& store,
                              const StepBreakdown& steps,
                              const PodAnalysisOptions& options) {
  CompileReport out;
  const std::optional<StringId> compile = store.FindString("Compile");
  if (!compile) return out;
  const pod::Keys keys(store);
  const pod::StepLocator locate(steps);
  for (size_t r = 0; r < steps.ranks.size(); ++r) {
    const size_t first = out.compiles.size();
    for (TrackId t : store.processes()[steps.ranks[r].process].tracks) {
      const SliceColumns& s = store.data(t).slices;
      for (uint32_t i = 0; i < s.size(); ++i) {
        if (s.name(i) != *compile) continue;
        CompileEvent c;
        c.rank = static_cast<int>(r);
        c.event = {t, trace_format::EventKind::kSlice, i};
        c.start_ns = s.start(i);
        c.duration_ns = pod::NonNegative(s.duration(i));
        const trace_format::EventArgs* args = store.FindArgs(c.event);
        c.graph_hash =
            pod::TextArg(store, args, keys.graph_hash).value_or(std::string());
        if (auto hit = pod::IntArg(args, keys.cache_hit)) {
          c.cache_hit = *hit != 0;
        }
        if (const trace_format::Arg* a = pod::FindArg(args, keys.signature)) {
          if (const auto* sid =
                  std::get_if<trace_format::StringId>(&a->value)) {
            c.signature = std::string(store.str(sid->id));
          }
        }
        c.graph_ops = pod::IntArg(args, keys.graph_ops).value_or(-1);
        c.step_row = locate.Find(c.rank, c.start_ns);
        c.step =
            pod::IntArg(args, keys.step)
                .value_or(c.step_row >= 0 ? steps.rows[c.step_row].step : -1);
        out.compiles.push_back(std::move(c));
      }
    }
    std::sort(out.compiles.begin() + static_cast<ptrdiff_t>(first),
              out.compiles.end(),
              [](const CompileEvent& a, const CompileEvent& b) {
                if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
                return a.event < b.event;
              });
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
        const size_t d =
            Distance(params, Parameters(out.compiles[j].signature));
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
        c.changes.push_back("graph_ops: " + std::to_string(p.graph_ops) +
                            " -> " + std::to_string(c.graph_ops));
      }
    }
  }
  return out;
}

}  // namespace podscope::viewer
