// The step breakdown: steps per rank matched across ranks, and each step's
// time split into categories (pod_analysis.h).
#include <algorithm>
#include <map>
#include <set>

#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"
#include "podscope/base/parallel.h"

namespace podscope::viewer {

using pod::Interval;

std::vector<RankInfo> PodRanks(const TraceStore& store) {
  std::vector<RankInfo> out;
  for (const ProcessInfo& p : store.processes()) {
    RankInfo r;
    r.process = p.id;
    r.host = p.host;
    r.host_name = p.host_name;
    r.pid = p.pid;
    r.rank = p.process_index >= 0 ? p.process_index
                                  : static_cast<int32_t>(out.size());
    out.push_back(std::move(r));
  }
  return out;
}

std::string_view StepCategoryName(StepCategory c) {
  switch (c) {
    case StepCategory::kCompute:
      return "compute";
    case StepCategory::kCollectiveTransfer:
      return "collective_transfer";
    case StepCategory::kCollectiveWait:
      return "collective_wait";
    case StepCategory::kDataLoading:
      return "data_loading";
    case StepCategory::kHost:
      return "host";
    case StepCategory::kIdle:
      return "idle";
  }
  return "unknown";
}

namespace {

// The rank's time split into segments, each of the highest-priority
// category covering it, with running totals for quick window sums.
class CategoryTimeline {
 public:
  explicit CategoryTimeline(pod::RankIntervals intervals) {
    struct Edge {
      int64_t t;
      int cat;
      int delta;
    };
    // Each category's union is sorted and disjoint, so its edges are in
    // time order already: the categories' edges are merged, not sorted.
    std::vector<Edge> edges;
    std::vector<Interval> unions[kStepCategoryCount];
    size_t total = 0;
    for (int c = 0; c < kStepCategoryCount; ++c) {
      unions[c] = pod::Union(std::move(intervals.of[c]));
      total += unions[c].size();
    }
    edges.reserve(2 * total);
    size_t next[kStepCategoryCount] = {};  // edge 2i: start of i, 2i+1: end
    auto edge_at = [&](int c) {
      const Interval& i = unions[c][next[c] / 2];
      return next[c] % 2 == 0 ? i.start : i.end;
    };
    while (edges.size() < 2 * total) {
      int best = -1;
      for (int c = 0; c < kStepCategoryCount; ++c) {
        if (next[c] >= 2 * unions[c].size()) continue;
        if (best < 0 || edge_at(c) < edge_at(best)) best = c;
      }
      edges.push_back({edge_at(best), best, next[best] % 2 == 0 ? +1 : -1});
      ++next[best];
    }
    int count[kStepCategoryCount] = {};
    for (size_t k = 0; k < edges.size();) {
      const int64_t t = edges[k].t;
      while (k < edges.size() && edges[k].t == t) {
        count[edges[k].cat] += edges[k].delta;
        ++k;
      }
      int cat = static_cast<int>(StepCategory::kIdle);
      for (int c = 0; c < kStepCategoryCount; ++c) {
        if (count[c] > 0) {
          cat = c;
          break;
        }
      }
      starts_.push_back(t);
      cats_.push_back(static_cast<uint8_t>(cat));
    }
  }

  // Category sums over [t0, t1); what nothing covers is idle.
  std::array<int64_t, kStepCategoryCount> Sum(int64_t t0, int64_t t1) const {
    std::array<int64_t, kStepCategoryCount> out{};
    if (t1 <= t0) return out;
    size_t k = static_cast<size_t>(
        std::upper_bound(starts_.begin(), starts_.end(), t0) - starts_.begin());
    int64_t at = t0;
    int cat = k == 0 ? static_cast<int>(StepCategory::kIdle) : cats_[k - 1];
    while (at < t1) {
      const int64_t next = k < starts_.size() ? std::min(starts_[k], t1) : t1;
      out[cat] = base::SaturatingAdd(out[cat], base::SaturatingSub(next, at));
      at = next;
      if (k < starts_.size()) cat = cats_[k++];
    }
    return out;
  }

 private:
  std::vector<int64_t> starts_;  // segment k is [starts_[k], starts_[k+1])
  std::vector<uint8_t> cats_;
};

using pod::RankCells;

}  // namespace

namespace pod {

RankCells MeasureRankSteps(const TraceStore& store) {
  const pod::Keys keys(store);
  const size_t n = store.processes().size();
  std::vector<std::vector<pod::RankStep>> steps(n);
  RankCells cells(n);
  base::ParallelFor(0, n, [&](size_t r) {
    steps[r] = pod::FindRankSteps(store, static_cast<ProcessId>(r), keys);
    if (steps[r].empty()) return;
    CategoryTimeline timeline(pod::CollectRankIntervals(
        store, static_cast<ProcessId>(r), keys, steps[r]));
    for (const pod::RankStep& s : steps[r]) {
      StepCell c;
      c.present = true;
      c.event = s.event;
      c.number = s.number;
      c.start_ns = s.window_start;
      c.duration_ns = base::SaturatingSub(s.window_end, s.window_start);
      c.category_ns = timeline.Sum(s.window_start, s.window_end);
      cells[r].push_back(c);
    }
  });
  return cells;
}

}  // namespace pod

namespace {

// Steps are matched by number when there are some and every step has a
// number, distinct within its rank.
bool MatchByNumber(const RankCells& cells) {
  bool any = false;
  for (const auto& rank : cells) any = any || !rank.empty();
  if (!any) return false;
  for (const auto& rank : cells) {
    std::set<int64_t> seen;
    for (const StepCell& c : rank) {
      if (c.number < 0 || !seen.insert(c.number).second) return false;
    }
  }
  return true;
}

// One row per step number, in order.
void RowsByNumber(const RankCells& cells, StepBreakdown* out) {
  const size_t n = cells.size();
  std::map<int64_t, size_t> row_of;
  for (size_t r = 0; r < n; ++r) {
    for (const StepCell& c : cells[r]) row_of.emplace(c.number, 0);
  }
  for (auto& [number, row] : row_of) {
    row = out->rows.size();
    StepRow sr;
    sr.step = number;
    sr.ranks.resize(n);
    out->rows.push_back(std::move(sr));
  }
  for (size_t r = 0; r < n; ++r) {
    for (const StepCell& c : cells[r]) out->rows[row_of[c.number]].ranks[r] = c;
  }
}

// Row k holds each rank's k-th step.
void RowsByOrder(const RankCells& cells, StepBreakdown* out) {
  const size_t n = cells.size();
  size_t rows = 0;
  for (size_t r = 0; r < n; ++r) rows = std::max(rows, cells[r].size());
  out->rows.resize(rows);
  for (size_t k = 0; k < rows; ++k) {
    out->rows[k].step = static_cast<int64_t>(k);
    out->rows[k].ranks.resize(n);
    for (size_t r = 0; r < n; ++r) {
      if (k < cells[r].size()) out->rows[k].ranks[r] = cells[r][k];
    }
  }
}

// Each row's spread and slowest rank, and each rank's totals over the rows.
void SumRows(StepBreakdown* out) {
  const size_t n = out->ranks.size();
  out->totals.resize(n);
  std::vector<std::vector<int64_t>> durations(n);
  for (StepRow& row : out->rows) {
    int64_t lo = 0, hi = 0;
    int present = 0;
    for (size_t r = 0; r < n; ++r) {
      const StepCell& c = row.ranks[r];
      if (!c.present) continue;
      RankStepTotals& t = out->totals[r];
      ++t.steps;
      t.total_ns = base::SaturatingAdd(t.total_ns, c.duration_ns);
      t.max_ns = std::max(t.max_ns, c.duration_ns);
      for (int k = 0; k < kStepCategoryCount; ++k) {
        t.category_ns[k] =
            base::SaturatingAdd(t.category_ns[k], c.category_ns[k]);
      }
      durations[r].push_back(c.duration_ns);
      if (present == 0 || c.duration_ns > hi) {
        hi = c.duration_ns;
        row.slowest_rank = static_cast<int>(r);
      }
      lo = present == 0 ? c.duration_ns : std::min(lo, c.duration_ns);
      ++present;
    }
    row.spread_ns = present > 1 ? base::SaturatingSub(hi, lo) : 0;
    if (present > 1 && row.spread_ns == 0) {
      row.slowest_rank = -1;  // all took the same time
    } else if (present > 1) {
      ++out->totals[row.slowest_rank].slowest_count;
    }
  }
  for (size_t r = 0; r < n; ++r) {
    out->totals[r].median_ns = base::Median(std::move(durations[r]));
  }
}

}  // namespace

StepBreakdown pod::BuildStepBreakdown(std::vector<RankInfo> ranks,
                                      const RankCells& cells) {
  StepBreakdown out;
  out.ranks = std::move(ranks);
  out.matched_by_number = MatchByNumber(cells);
  if (out.matched_by_number) {
    RowsByNumber(cells, &out);
  } else {
    RowsByOrder(cells, &out);
  }
  SumRows(&out);
  return out;
}

StepBreakdown AnalyzeSteps(const TraceStore& store,
                           const PodAnalysisOptions& /*options*/) {
  return pod::BuildStepBreakdown(PodRanks(store), pod::MeasureRankSteps(store));
}

int FindStepRow(const StepBreakdown& steps, int rank, int64_t t) {
  return pod::StepLocator(steps).Find(rank, t);
}

}  // namespace podscope::viewer
