#include "podscope/viewer/analysis_labels.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "podscope/base/human_format.h"
#include "podscope/base/numeric.h"

namespace podscope::viewer {
namespace {

using base::FormatDuration;

std::string FormatP(double p) {
  if (p < 0.0001) return "p < 0.0001";
  return absl::StrFormat("p = %.2g", p);
}

// "rank 2 is the straggler: ..." or "No consistent straggler: ...", with
// the test's evidence.
std::string WhoWasWaitedFor(const StepBreakdown& steps,
                            const StragglerReport& report) {
  const StragglerTest& t = report.test;
  if (t.candidate < 0) {
    return "No consistent straggler: no rank arrived last alone";
  }
  int64_t others_max = 0;
  for (const RankStraggle& r : report.ranks) {
    if (r.rank != t.candidate) {
      others_max = std::max(others_max, r.wait_caused_ns);
    }
  }
  const int64_t own = report.ranks[t.candidate].wait_caused_ns;
  std::string out =
      report.straggler
          ? absl::StrCat(RankLabel(steps, t.candidate),
                         " is the straggler: the others waited ",
                         FormatDuration(own), " for it")
          : absl::StrCat(
                "No consistent straggler: ", RankLabel(steps, t.candidate),
                " caused the most waiting, ", FormatDuration(own));
  absl::StrAppend(&out, ", at most ", FormatDuration(others_max),
                  " for any other rank (", FormatP(t.p_value), " over ",
                  t.units, " ", t.by_steps ? "step" : "collective",
                  t.units == 1 ? "" : "s");
  // The p-value is multiplied by the number of ranks, as the candidate was
  // picked after looking, and capped at 1: said, so that "p = 1" reads as
  // "no evidence once the choice is counted", not as a certainty.
  if (t.p_value >= 0.0001) {
    absl::StrAppend(&out, ", corrected for picking 1 of ", report.ranks.size(),
                    " ranks");
  }
  absl::StrAppend(&out, ")");
  if (report.straggler && !report.straggler->longer_scopes.empty()) {
    const LongerScope& l = report.straggler->longer_scopes.front();
    absl::StrAppend(&out, "; longer on it than on the others: ", l.name, " (+",
                    FormatDuration(l.excess_ns()), ")");
  }
  return out;
}

// What each rank waited for the last arrival, summed over the collectives.
std::vector<int64_t> WaitedForLastArrival(const StragglerReport& report) {
  std::vector<int64_t> waited(report.ranks.size(), 0);
  for (const JoinedCollective& j : report.collectives) {
    int64_t last = INT64_MIN;
    for (const CollectiveArrival& a : j.arrivals) {
      last = std::max(last, a.start_ns);
    }
    for (const CollectiveArrival& a : j.arrivals) {
      if (a.rank >= 0 && static_cast<size_t>(a.rank) < waited.size()) {
        waited[a.rank] = base::SaturatingAdd(waited[a.rank], last - a.start_ns);
      }
    }
  }
  return waited;
}

// "ranks wait 6.5–10.5% of step time in collectives": each rank's
// collective wait (the step category, from the recorded `wait_ns`; when no
// rank recorded any, the time it waited for the last arrival) over its
// step time. Without steps, the times: "ranks wait 1.20 ms–3.40 ms in
// collectives".
std::string HowLongRanksWait(const StepBreakdown& steps,
                             const StragglerReport& report) {
  const std::vector<int64_t> waited = WaitedForLastArrival(report);
  constexpr int kWait = static_cast<int>(StepCategory::kCollectiveWait);
  bool recorded = false;
  for (const RankStepTotals& x : steps.totals) {
    recorded = recorded || x.category_ns[kWait] > 0;
  }
  std::vector<double> shares;
  for (size_t r = 0; r < steps.totals.size(); ++r) {
    const RankStepTotals& x = steps.totals[r];
    if (x.total_ns <= 0) continue;
    const int64_t wait = recorded            ? x.category_ns[kWait]
                         : r < waited.size() ? waited[r]
                                             : 0;
    shares.push_back(static_cast<double>(wait) /
                     static_cast<double>(x.total_ns));
  }
  if (shares.size() >= 2) {
    const auto [lo, hi] = std::minmax_element(shares.begin(), shares.end());
    const std::string low = FormatShare(*lo), high = FormatShare(*hi);
    if (low == high) {
      return absl::StrCat("ranks wait ", low, " of step time in collectives");
    }
    return absl::StrCat("ranks wait ", low.substr(0, low.size() - 1), "–", high,
                        " of step time in collectives");
  }
  if (waited.empty()) return "no rank waited in collectives";
  const auto [lo, hi] = std::minmax_element(waited.begin(), waited.end());
  if (*lo == *hi) {
    return absl::StrCat("ranks wait ", FormatDuration(*lo), " in collectives");
  }
  return absl::StrCat("ranks wait ", FormatDuration(*lo), "–",
                      FormatDuration(*hi), " in collectives");
}

// "last to arrive: rank 2 ×120, rank 1 ×114, rank 0 ×104", most often
// first, at most eight ranks.
std::string WhoArrivedLast(const StepBreakdown& steps,
                           const StragglerReport& report) {
  constexpr size_t kShown = 8;
  std::vector<size_t> order(report.ranks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return report.ranks[a].last_count > report.ranks[b].last_count;
  });
  std::vector<std::string> parts;
  for (size_t i = 0; i < order.size() && i < kShown; ++i) {
    parts.push_back(absl::StrCat(RankLabel(steps, static_cast<int>(order[i])),
                                 " ×", report.ranks[order[i]].last_count));
  }
  if (order.size() > kShown) parts.push_back("…");
  return absl::StrCat("last to arrive: ", absl::StrJoin(parts, ", "));
}

// "all_reduce #8" for the collective ids the runtime writes
// ("<communicator>#<sequence>") and for collectives joined by order
// ("AllReduce#3"), else "<name> <id>".
std::string CollectiveLabel(const JoinedCollective& j) {
  const size_t hash = j.key.rfind('#');
  if (hash != std::string::npos && hash + 1 < j.key.size()) {
    return absl::StrCat(j.name, " #", j.key.substr(hash + 1));
  }
  return absl::StrCat(j.name, " ", j.key);
}

}  // namespace

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

std::string StragglerVerdict(const StepBreakdown& steps,
                             const StragglerReport& report) {
  if (report.collectives.empty()) {
    return report.ranks.size() >= 2
               ? "No collectives joined across ranks: no straggler to name"
               : "";
  }
  std::string out = absl::StrCat(WhoWasWaitedFor(steps, report), "; ",
                                 HowLongRanksWait(steps, report), "; ",
                                 WhoArrivedLast(steps, report));
  if (report.worst_wait >= 0) {
    const JoinedCollective& j = report.collectives[report.worst_wait];
    absl::StrAppend(&out, "; worst wait ", FormatDuration(j.spread_ns), " at ",
                    CollectiveLabel(j));
    if (j.step_row >= 0 &&
        static_cast<size_t>(j.step_row) < steps.rows.size()) {
      absl::StrAppend(&out, ", step ", steps.rows[j.step_row].step);
    }
  }
  return out;
}

}  // namespace podscope::viewer
