// Stragglers: collectives joined across ranks, who arrived last, and the
// rank whose lateness made the others wait significantly longer than
// anyone else's, with its evidence (pod_analysis.h).
#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"

namespace podscope::viewer {
namespace {

int64_t MedianOf(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

// A step cell's scope times by name id (ScopeTimes over its window).
absl::flat_hash_map<StringId, int64_t> CellTimes(const TraceStore& store,
                                                 ProcessId p,
                                                 const pod::Keys& keys,
                                                 const StepCell& cell) {
  const int64_t end = base::SaturatingAdd(cell.start_ns, cell.duration_ns);
  return pod::ScopeTimes(store, p, keys, cell.start_ns, end, cell.start_ns,
                         end);
}

// The scopes of the straggler that were longer than the others' median in
// the steps where it arrived last. Names stay ids of the store until each
// row is done: only the straggler's names become text.
std::vector<LongerScope> FindLongerScopes(const TraceStore& store,
                                          const StepBreakdown& steps,
                                          const pod::Keys& keys, int straggler,
                                          const std::vector<int>& rows,
                                          const PodAnalysisOptions& options) {
  std::vector<pod::RowScopes> scopes;
  for (int row_index : rows) {
    const StepRow& row = steps.rows[row_index];
    if (!row.ranks[straggler].present) continue;
    const auto own = CellTimes(store, steps.ranks[straggler].process, keys,
                               row.ranks[straggler]);
    std::vector<std::pair<StringId, int64_t>> names(own.begin(), own.end());
    std::vector<std::vector<int64_t>> others(names.size());
    pod::RowScopes rs;
    rs.step = row.step;
    for (size_t r = 0; r < row.ranks.size(); ++r) {
      if (static_cast<int>(r) == straggler || !row.ranks[r].present) continue;
      const auto times =
          CellTimes(store, steps.ranks[r].process, keys, row.ranks[r]);
      ++rs.other_ranks;
      for (size_t k = 0; k < names.size(); ++k) {
        auto it = times.find(names[k].first);
        others[k].push_back(it == times.end() ? 0 : it->second);
      }
    }
    for (size_t k = 0; k < names.size(); ++k) {
      const std::string name(store.str(names[k].first));
      rs.own.emplace(name, names[k].second);
      rs.others.emplace(name, std::move(others[k]));
    }
    scopes.push_back(std::move(rs));
  }
  return pod::LongerScopesOf(scopes, options);
}

// The collective slices on the device tracks of a rank's process, by start.
std::vector<pod::Arrival> FindArrivals(const TraceStore& store,
                                       const pod::Keys& keys,
                                       pod::CollectiveTest& is_collective,
                                       ProcessId process, int rank) {
  std::vector<pod::Arrival> found;
  for (TrackId t : store.processes()[process].tracks) {
    if (!pod::IsDevice(store.tracks()[t])) continue;
    const SliceColumns& s = store.data(t).slices;
    for (uint32_t i = 0; i < s.size(); ++i) {
      const EventRef e{t, trace_format::EventKind::kSlice, i};
      if (!is_collective(e, s.name(i))) continue;
      const trace_format::EventArgs* args = store.FindArgs(e);
      pod::Arrival f;
      f.a.rank = rank;
      f.a.event = e;
      f.a.start_ns = s.start(i);
      f.a.duration_ns = pod::NonNegative(s.duration(i));
      f.a.wait_ns = pod::IntArg(args, keys.wait_ns).value_or(-1);
      f.name = std::string(store.str(s.name(i)));
      f.id = pod::TextArg(store, args, keys.collective_id);
      if (f.id && f.id->empty()) f.id.reset();
      found.push_back(std::move(f));
    }
  }
  std::sort(found.begin(), found.end(),
            [](const pod::Arrival& a, const pod::Arrival& b) {
              if (a.a.start_ns != b.a.start_ns) {
                return a.a.start_ns < b.a.start_ns;
              }
              return a.a.event < b.a.event;
            });
  return found;
}

int64_t SumRecordedWaits(const std::vector<pod::Arrival>& arrivals) {
  int64_t sum = 0;
  for (const pod::Arrival& f : arrivals) {
    if (f.a.wait_ns > 0) sum = base::SaturatingAdd(sum, f.a.wait_ns);
  }
  return sum;
}

// Joins the collectives of all ranks: by `collective_id` when the slice has
// one, else by name and how many of that name came before on the rank.
class CollectiveJoiner {
 public:
  // One rank's arrivals, by start.
  void Add(const std::vector<pod::Arrival>& arrivals) {
    absl::flat_hash_map<std::string_view, int64_t> kth;
    for (const pod::Arrival& f : arrivals) {
      const bool by_id = f.id.has_value();
      const std::string key =
          by_id ? "id:" + *f.id : f.name + "#" + std::to_string(kth[f.name]++);
      auto [it, inserted] = index_.try_emplace(key, joined_.size());
      if (inserted) {
        JoinedCollective j;
        j.name = f.name;
        j.key = by_id ? *f.id : key;
        j.joined_by_id = by_id;
        joined_.push_back(std::move(j));
      }
      JoinedCollective& j = joined_[it->second];
      // A process with several devices records one slice per device: its
      // first arrival stands for the rank.
      if (!j.arrivals.empty() && j.arrivals.back().rank == f.a.rank) continue;
      j.arrivals.push_back(f.a);
    }
  }

  // In the order each was first seen.
  std::vector<JoinedCollective> Take() { return std::move(joined_); }

 private:
  absl::flat_hash_map<std::string, size_t> index_;  // key -> joined_
  std::vector<JoinedCollective> joined_;
};

int64_t LastArrivalNs(const JoinedCollective& j) {
  int64_t last = INT64_MIN;
  for (const CollectiveArrival& a : j.arrivals)
    last = std::max(last, a.start_ns);
  return last;
}

// Sets who arrived last at a collective (of two or more arrivals), by how
// much, and the wait that caused the others; a tie for last blames no one.
void MeasureLateness(JoinedCollective* j) {
  int64_t first = j->arrivals[0].start_ns, last = first;
  int last_rank = j->arrivals[0].rank;
  for (const CollectiveArrival& a : j->arrivals) {
    first = std::min(first, a.start_ns);
    if (a.start_ns > last) {
      last = a.start_ns;
      last_rank = a.rank;
    }
  }
  int64_t second = first;
  int at_last = 0;
  for (const CollectiveArrival& a : j->arrivals) {
    if (a.start_ns == last) ++at_last;
    if (a.start_ns < last) second = std::max(second, a.start_ns);
  }
  j->spread_ns = base::SaturatingSub(last, first);
  j->late_by_ns = at_last > 1 ? 0 : base::SaturatingSub(last, second);
  j->last_rank = at_last > 1 ? -1 : last_rank;
  for (const CollectiveArrival& a : j->arrivals) {
    j->wait_caused_ns = base::SaturatingAdd(
        j->wait_caused_ns, base::SaturatingSub(last, a.start_ns));
  }
}

// Measures each collective that two or more ranks joined, charges its
// lateness to the rank that arrived last, and keeps it in the report, by
// last arrival.
void ChargeLateArrivals(const StepBreakdown& steps,
                        std::vector<JoinedCollective> joined,
                        StragglerReport* out) {
  const pod::StepLocator locate(steps);
  for (JoinedCollective& j : joined) {
    if (j.arrivals.size() < 2) continue;
    MeasureLateness(&j);
    if (j.last_rank >= 0) {
      j.step_row = locate.Find(j.last_rank, LastArrivalNs(j));
      RankStraggle& rs = out->ranks[j.last_rank];
      ++rs.last_count;
      rs.wait_caused_ns =
          base::SaturatingAdd(rs.wait_caused_ns, j.wait_caused_ns);
      rs.late_by_ns = base::SaturatingAdd(rs.late_by_ns, j.late_by_ns);
    }
    if (j.joined_by_id) {
      ++out->joined_by_id;
    } else {
      ++out->joined_by_order;
    }
    out->collectives.push_back(std::move(j));
  }
  std::sort(out->collectives.begin(), out->collectives.end(),
            [](const JoinedCollective& a, const JoinedCollective& b) {
              const int64_t la = LastArrivalNs(a), lb = LastArrivalNs(b);
              if (la != lb) return la < lb;
              return a.key < b.key;
            });
}

// The collective with the widest spread of arrivals, -1 with none.
int WorstWait(const std::vector<JoinedCollective>& collectives) {
  int worst = -1;
  for (size_t i = 0; i < collectives.size(); ++i) {
    if (worst < 0 || collectives[i].spread_ns > collectives[worst].spread_ns) {
      worst = static_cast<int>(i);
    }
  }
  return worst;
}

// The evidence against the straggler: the steps and collectives it was last
// at, most often first (its longer scopes are found by the caller, from
// `rows`).
Straggler DescribeStraggler(const StepBreakdown& steps,
                            const StragglerReport& report, int rank,
                            std::vector<int>* rows) {
  const RankStraggle& rs = report.ranks[rank];
  Straggler s;
  s.rank = rank;
  s.last_count = rs.last_count;
  s.joined = report.collectives.size();
  s.wait_caused_ns = rs.wait_caused_ns;
  std::set<int> in_rows;
  std::map<std::string, uint64_t> names;
  for (const JoinedCollective& j : report.collectives) {
    if (j.last_rank != rank) continue;
    ++names[j.name];
    if (j.step_row >= 0) in_rows.insert(j.step_row);
  }
  for (int row : in_rows) s.steps.push_back(steps.rows[row].step);
  for (auto& [name, count] : names) s.collectives.emplace_back(name, count);
  std::sort(s.collectives.begin(), s.collectives.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  rows->assign(in_rows.begin(), in_rows.end());
  return s;
}

}  // namespace

std::vector<std::vector<pod::Arrival>> pod::FindAllArrivals(
    const TraceStore& store) {
  const pod::Keys keys(store);
  pod::CollectiveTest is_collective(store, keys);
  std::vector<std::vector<Arrival>> out(store.processes().size());
  for (ProcessId p = 0; p < out.size(); ++p) {
    out[p] = FindArrivals(store, keys, is_collective, p, static_cast<int>(p));
  }
  return out;
}

StragglerReport pod::JoinStragglers(
    const StepBreakdown& steps,
    const std::vector<std::vector<Arrival>>& arrivals,
    const PodAnalysisOptions& options, std::vector<int>* straggler_rows) {
  StragglerReport out;
  const size_t n = steps.ranks.size();
  out.ranks.resize(n);
  for (size_t r = 0; r < n; ++r) out.ranks[r].rank = static_cast<int>(r);
  CollectiveJoiner joiner;
  for (size_t r = 0; r < n && r < arrivals.size(); ++r) {
    out.ranks[r].waited_ns = SumRecordedWaits(arrivals[r]);
    joiner.Add(arrivals[r]);
  }
  ChargeLateArrivals(steps, joiner.Take(), &out);

  out.worst_wait = WorstWait(out.collectives);
  out.test = pod::RunStragglerTest(steps, out);
  const int candidate = out.test.candidate;
  if (candidate >= 0 && out.test.p_value <= options.straggler_alpha &&
      out.test.ratio >= options.straggler_min_ratio &&
      out.ranks[candidate].last_count >= options.straggler_min_collectives) {
    out.straggler = DescribeStraggler(steps, out, candidate, straggler_rows);
  }
  return out;
}

StragglerReport AnalyzeStragglers(const TraceStore& store,
                                  const StepBreakdown& steps,
                                  const PodAnalysisOptions& options) {
  // A rank is a process of this store: its arrivals, in rank order.
  std::vector<std::vector<pod::Arrival>> all = pod::FindAllArrivals(store);
  std::vector<std::vector<pod::Arrival>> arrivals(steps.ranks.size());
  for (size_t r = 0; r < steps.ranks.size(); ++r) {
    const ProcessId p = steps.ranks[r].process;
    if (p >= all.size()) continue;
    arrivals[r] = std::move(all[p]);
    for (pod::Arrival& a : arrivals[r]) a.a.rank = static_cast<int>(r);
  }
  std::vector<int> rows;
  StragglerReport out = pod::JoinStragglers(steps, arrivals, options, &rows);
  if (out.straggler) {
    const pod::Keys keys(store);
    out.straggler->longer_scopes = FindLongerScopes(
        store, steps, keys, out.straggler->rank, rows, options);
  }
  return out;
}

pod::NamedTimes pod::CellScopeTimes(const TraceStore& store, ProcessId p,
                                    const Keys& keys, const StepCell& cell) {
  NamedTimes out;
  for (const auto& [name, ns] : CellTimes(store, p, keys, cell)) {
    out.emplace(store.str(name), ns);
  }
  return out;
}

void pod::RowScopes::AddOther(const NamedTimes& times) {
  ++other_ranks;
  for (const auto& [name, ns] : own) {
    auto it = times.find(name);
    others[name].push_back(it == times.end() ? 0 : it->second);
  }
}

std::vector<LongerScope> pod::LongerScopesOf(
    const std::vector<RowScopes>& rows, const PodAnalysisOptions& options) {
  std::map<std::string, LongerScope> by_name;
  for (const RowScopes& row : rows) {
    if (row.other_ranks == 0) continue;
    for (const auto& [name, ns] : row.own) {
      auto it = row.others.find(name);
      const int64_t median = it == row.others.end() ? 0 : MedianOf(it->second);
      if (static_cast<double>(ns) <=
              options.longer_scope_factor * static_cast<double>(median) ||
          base::SaturatingSub(ns, median) < options.longer_scope_min_ns) {
        continue;
      }
      LongerScope& l = by_name[name];
      l.name = name;
      l.steps.push_back(row.step);
      l.own_ns = base::SaturatingAdd(l.own_ns, ns);
      l.others_median_ns = base::SaturatingAdd(l.others_median_ns, median);
    }
  }
  std::vector<LongerScope> out;
  for (auto& [name, l] : by_name) out.push_back(std::move(l));
  std::sort(out.begin(), out.end(),
            [](const LongerScope& a, const LongerScope& b) {
              if (a.excess_ns() != b.excess_ns()) {
                return a.excess_ns() > b.excess_ns();
              }
              return a.name < b.name;
            });
  if (options.top > 0 && out.size() > options.top) out.resize(options.top);
  return out;
}

}  // namespace podscope::viewer
