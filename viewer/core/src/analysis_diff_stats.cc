// The statistics of `podscope diff` (session_diff.h): the Mann-Whitney U
// test, relative change, and the verdict sentence.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/viewer/session_diff.h"

namespace podscope::viewer {

UTest MannWhitney(std::span<const int64_t> baseline,
                  std::span<const int64_t> candidate) {
  UTest out;
  const size_t n1 = baseline.size(), n2 = candidate.size();
  if (n1 == 0 || n2 == 0) return out;
  // Ranks of the pooled sample, ties sharing their mean rank.
  struct Value {
    int64_t v;
    bool cand;
  };
  std::vector<Value> pooled;
  pooled.reserve(n1 + n2);
  for (int64_t v : baseline) pooled.push_back({v, false});
  for (int64_t v : candidate) pooled.push_back({v, true});
  std::sort(pooled.begin(), pooled.end(),
            [](const Value& a, const Value& b) { return a.v < b.v; });
  const double n = static_cast<double>(n1 + n2);
  double cand_rank_sum = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].v == pooled[i].v) ++j;
    const double t = static_cast<double>(j - i);
    const double mean_rank =
        (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].cand) cand_rank_sum += mean_rank;
    }
    tie_term += t * t * t - t;
    i = j;
  }
  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2);
  out.u = cand_rank_sum - d2 * (d2 + 1) / 2;
  out.effect = 2 * out.u / (d1 * d2) - 1;
  const double mean = d1 * d2 / 2;
  const double variance = d1 * d2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (variance <= 0) {
    // Every value equal: no evidence of any difference.
    out.p_value = 1;
    return out;
  }
  // Continuity-corrected normal approximation.
  const double z =
      std::max(0.0, std::abs(out.u - mean) - 0.5) / std::sqrt(variance);
  out.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return out;
}

double DiffFigure::change() const {
  if (base_ns == 0) return cand_ns == 0 ? 0 : (cand_ns > 0 ? 1 : -1);
  return (cand_ns - base_ns) / std::abs(base_ns);
}

const char* NamedChangeKindName(NamedChange::Kind k) {
  switch (k) {
    case NamedChange::Kind::kOp:
      return "op";
    case NamedChange::Kind::kScope:
      return "scope";
    case NamedChange::Kind::kCollective:
      return "collective";
  }
  return "op";
}

std::vector<const DiffFigure*> SessionDiff::Figures() const {
  std::vector<const DiffFigure*> out = {&step_median, &step_p90};
  for (const RankDiff& r : per_rank) {
    out.push_back(&r.median);
    out.push_back(&r.p90);
  }
  for (const DiffFigure& c : categories) out.push_back(&c);
  for (const NamedChange& c : changes) out.push_back(&c.figure);
  for (const NamedChange& c : appeared) out.push_back(&c.figure);
  for (const NamedChange& c : vanished) out.push_back(&c.figure);
  return out;
}

const DiffFigure* SessionDiff::Find(std::string_view name) const {
  for (const DiffFigure* f : Figures()) {
    if (f->name == name) return f;
  }
  return nullptr;
}

namespace {

std::string Ms(double ns) { return absl::StrFormat("%.3g ms", ns / 1e6); }

std::string P(double p) {
  return p < 1e-4 ? std::string("p < 0.0001") : absl::StrFormat("p = %.2g", p);
}

}  // namespace

std::string DiffVerdict(const SessionDiff& diff) {
  const DiffFigure& f = diff.step_median;
  if (f.base_n == 0 || f.cand_n == 0) {
    return "Step time: not compared (no steps in " +
           std::string(f.base_n == 0 ? "the baseline" : "the candidate") +
           " after the skipped ones).";
  }
  const std::string change = absl::StrFormat("%+.1f %%", 100 * f.change());
  if (!f.significant) {
    return absl::StrCat("Step time: no significant change (median ", change,
                        ", ", Ms(f.base_ns), " -> ", Ms(f.cand_ns), ", ",
                        P(f.test.p_value), " over ", f.base_n, " and ",
                        f.cand_n, " steps).");
  }
  return absl::StrCat("Step time: ", f.delta_ns() > 0 ? "slower" : "faster",
                      " by ", change, " (median ", Ms(f.base_ns), " -> ",
                      Ms(f.cand_ns), ", ", P(f.test.p_value), ", effect ",
                      absl::StrFormat("%+.2f", f.test.effect), " over ",
                      f.base_n, " and ", f.cand_n, " steps).");
}

}  // namespace podscope::viewer
