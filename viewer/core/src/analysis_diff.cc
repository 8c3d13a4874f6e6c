// `podscope diff` (session_diff.h): each session reduced to per-step
// samples (step time per rank and for the job, time per category, self
// time per op, host scope and collective), then the two compared sample
// by sample.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"
#include "podscope/viewer/analysis_labels.h"
#include "podscope/viewer/session_diff.h"

namespace podscope::viewer {
namespace {

using Kind = NamedChange::Kind;

// The per-step time of one name (an op, scope or collective).
struct NameSeries {
  Kind kind = Kind::kOp;
  std::string name;
  std::vector<int64_t> per_row;   // summed over ranks, one per kept row
  std::vector<int64_t> per_rank;  // summed over kept rows, by rank index
  uint64_t count = 0;
};

// One session reduced to per-step samples over its kept rows.
struct Profile {
  StepBreakdown steps;
  size_t first_row = 0;  // rows before it are skipped
  size_t kept() const { return steps.rows.size() - first_row; }
  // By rank (RankInfo::rank): the rank's index in steps.ranks.
  absl::flat_hash_map<int, size_t> index_of_rank;
  std::vector<int64_t> job_step;  // per kept row, the slowest rank's
  std::vector<NameSeries> names;
  absl::flat_hash_map<std::pair<Kind, std::string>, size_t> name_index;
  CompileReport compiles;
};

// Self time by name of every op, host scope and collective inside a kept
// step, per row and per rank.
void CollectNames(const TraceStore& store, Profile* p) {
  const pod::Keys keys(store);
  pod::CollectiveTest is_collective(store, keys);
  const pod::StepLocator locate(p->steps);
  absl::flat_hash_map<ProcessId, size_t> rank_of_process;
  for (size_t r = 0; r < p->steps.ranks.size(); ++r) {
    rank_of_process[p->steps.ranks[r].process] = r;
  }
  // The step slices themselves (and names used for them) are the steps,
  // not scopes inside them.
  absl::flat_hash_set<StringId> step_names;
  for (const StepRow& row : p->steps.rows) {
    for (const StepCell& c : row.ranks) {
      if (c.present) step_names.insert(store.NameOf(c.event));
    }
  }
  // Slot of (kind, name id) in p->names, -1 until seen.
  std::vector<int32_t> slot(3 * store.string_count(), -1);
  const size_t kept = p->kept();
  for (const TrackInfo& info : store.tracks()) {
    const bool device = pod::IsDevice(info);
    if (!device && !pod::IsThread(info)) continue;
    const auto rank_it = rank_of_process.find(info.process);
    if (rank_it == rank_of_process.end()) continue;
    const size_t rank = rank_it->second;
    const SliceColumns& s = store.data(info.id).slices;
    for (uint32_t d = 0; d < s.depth_count(); ++d) {
      s.ForEachSelfTime(
          s.depth_begin(d), s.depth_end(d), [&](uint32_t i, int64_t self) {
            const StringId name = s.name(i);
            if (step_names.contains(name)) return;
            const int row = locate.Find(static_cast<int>(rank), s.start(i));
            if (row < static_cast<int>(p->first_row)) return;
            const EventRef ref{info.id, trace_format::EventKind::kSlice, i};
            const Kind kind = is_collective(ref, name) ? Kind::kCollective
                              : device                 ? Kind::kOp
                                                       : Kind::kScope;
            if (name >= store.string_count()) return;
            int32_t& at =
                slot[3 * static_cast<size_t>(name) + static_cast<size_t>(kind)];
            if (at < 0) {
              std::pair<Kind, std::string> key{kind,
                                               std::string(store.str(name))};
              auto [it, fresh] =
                  p->name_index.try_emplace(key, p->names.size());
              if (fresh) {
                NameSeries n;
                n.kind = kind;
                n.name = key.second;
                n.per_row.assign(kept, 0);
                n.per_rank.assign(p->steps.ranks.size(), 0);
                p->names.push_back(std::move(n));
              }
              at = static_cast<int32_t>(it->second);
            }
            NameSeries& n = p->names[static_cast<size_t>(at)];
            const int64_t t = pod::NonNegative(self);
            int64_t& cell = n.per_row[static_cast<size_t>(row) - p->first_row];
            cell = base::SaturatingAdd(cell, t);
            n.per_rank[rank] = base::SaturatingAdd(n.per_rank[rank], t);
            ++n.count;
          });
    }
  }
}

Profile BuildProfile(const TraceStore& store, const DiffOptions& options) {
  Profile p;
  p.steps = AnalyzeSteps(store);
  p.first_row = std::min(options.skip_steps, p.steps.rows.size());
  for (size_t r = 0; r < p.steps.ranks.size(); ++r) {
    p.index_of_rank.try_emplace(p.steps.ranks[r].rank, r);
  }
  for (size_t row = p.first_row; row < p.steps.rows.size(); ++row) {
    int64_t slowest = -1;
    for (const StepCell& c : p.steps.rows[row].ranks) {
      if (c.present) slowest = std::max(slowest, c.duration_ns);
    }
    if (slowest >= 0) p.job_step.push_back(slowest);
  }
  CollectNames(store, &p);
  p.compiles = AnalyzeCompiles(store, p.steps);
  return p;
}

// Nearest-rank percentile (q in (0, 1]).
double Percentile(std::vector<int64_t> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k =
      static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return static_cast<double>(v[std::clamp<size_t>(k, 1, v.size()) - 1]);
}

double Mean(const std::vector<int64_t>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  return sum / static_cast<double>(v.size());
}

enum class Statistic { kMedian, kP90, kMean };

DiffFigure Compare(std::string name, const std::vector<int64_t>& base,
                   const std::vector<int64_t>& cand, Statistic stat,
                   const DiffOptions& options) {
  DiffFigure f;
  f.name = std::move(name);
  f.base_n = base.size();
  f.cand_n = cand.size();
  auto value = [&](const std::vector<int64_t>& v) {
    switch (stat) {
      case Statistic::kMedian:
        return static_cast<double>(base::Median(v));
      case Statistic::kP90:
        return Percentile(v, 0.9);
      case Statistic::kMean:
        return Mean(v);
    }
    return 0.0;
  };
  f.base_ns = value(base);
  f.cand_ns = value(cand);
  f.test = MannWhitney(base, cand);
  f.significant = f.base_n > 0 && f.cand_n > 0 &&
                  f.test.p_value < options.alpha &&
                  std::abs(f.change()) >= options.min_change;
  return f;
}

// The steps of rank index `r` over the kept rows; with `busy`, less the
// time the rank waited in collectives (its own work).
std::vector<int64_t> RankSteps(const Profile& p, size_t r, bool busy = false) {
  std::vector<int64_t> out;
  for (size_t row = p.first_row; row < p.steps.rows.size(); ++row) {
    const auto& cells = p.steps.rows[row].ranks;
    if (r < cells.size() && cells[r].present) {
      const StepCell& c = cells[r];
      out.push_back(
          busy ? base::SaturatingSub(c.duration_ns,
                                     c.category(StepCategory::kCollectiveWait))
               : c.duration_ns);
    }
  }
  return out;
}

// Per kept row, category c's time averaged over the ranks that ran it.
std::vector<int64_t> CategorySeries(const Profile& p, int c) {
  std::vector<int64_t> out;
  for (size_t row = p.first_row; row < p.steps.rows.size(); ++row) {
    int64_t sum = 0, n = 0;
    for (const StepCell& cell : p.steps.rows[row].ranks) {
      if (!cell.present) continue;
      sum = base::SaturatingAdd(sum, cell.category_ns[c]);
      ++n;
    }
    if (n > 0) out.push_back(sum / n);
  }
  return out;
}

// The name's per-row series divided by the ranks, so that its mean is the
// time per rank per step.
std::vector<int64_t> PerRankSeries(const NameSeries& n, size_t ranks) {
  std::vector<int64_t> out = n.per_row;
  const auto d = static_cast<int64_t>(std::max<size_t>(ranks, 1));
  for (int64_t& v : out) v /= d;
  return out;
}

void CompareRanks(const Profile& base, const Profile& cand,
                  const DiffOptions& options, SessionDiff* out) {
  std::vector<int> ranks;
  for (const auto& [rank, index] : base.index_of_rank) {
    if (cand.index_of_rank.contains(rank)) ranks.push_back(rank);
  }
  std::sort(ranks.begin(), ranks.end());
  out->ranks = ranks.size();
  double largest = 0;
  for (int rank : ranks) {
    const size_t bi = base.index_of_rank.at(rank);
    const size_t ci = cand.index_of_rank.at(rank);
    const std::vector<int64_t> b = RankSteps(base, bi), c = RankSteps(cand, ci);
    RankDiff d;
    d.rank = rank;
    d.label = RankLabel(cand.steps, static_cast<int>(ci));
    const std::string prefix = absl::StrCat("rank", rank, ".");
    d.median =
        Compare(prefix + "step_ms.median", b, c, Statistic::kMedian, options);
    d.p90 = Compare(prefix + "step_ms.p90", b, c, Statistic::kP90, options);
    // In a synchronous job every rank's step moves with the slowest
    // one's: the rank that changed is the one whose own work (its step
    // less its waits in collectives) moved most.
    const double own =
        base::Median(RankSteps(cand, ci, /*busy=*/true)) -
        static_cast<double>(base::Median(RankSteps(base, bi, /*busy=*/true)));
    if (std::abs(own) > std::abs(largest)) {
      largest = own;
      out->largest_rank = rank;
      out->largest_rank_own_ns = own;
    }
    out->per_rank.push_back(std::move(d));
  }
}

NamedChange ChangeOf(const Profile& base, const Profile& cand,
                     const NameSeries* b, const NameSeries* c,
                     const DiffOptions& options) {
  const NameSeries& any = b != nullptr ? *b : *c;
  NamedChange out;
  out.kind = any.kind;
  const std::vector<int64_t> bs =
      b != nullptr ? PerRankSeries(*b, base.steps.ranks.size())
                   : std::vector<int64_t>(base.kept(), 0);
  const std::vector<int64_t> cs =
      c != nullptr ? PerRankSeries(*c, cand.steps.ranks.size())
                   : std::vector<int64_t>(cand.kept(), 0);
  out.figure =
      Compare(absl::StrCat(NamedChangeKindName(any.kind), ":", any.name), bs,
              cs, Statistic::kMean, options);
  out.base_count = b != nullptr ? b->count : 0;
  out.cand_count = c != nullptr ? c->count : 0;
  // The rank whose mean per step moved most.
  for (const auto& [rank, ci] : cand.index_of_rank) {
    const auto bi = base.index_of_rank.find(rank);
    const double cb = c != nullptr && cand.kept() > 0
                          ? static_cast<double>(c->per_rank[ci]) /
                                static_cast<double>(cand.kept())
                          : 0;
    const double bb =
        b != nullptr && bi != base.index_of_rank.end() && base.kept() > 0
            ? static_cast<double>(b->per_rank[bi->second]) /
                  static_cast<double>(base.kept())
            : 0;
    if (out.rank < 0 || std::abs(cb - bb) > std::abs(out.rank_delta_ns)) {
      out.rank = rank;
      out.rank_delta_ns = cb - bb;
    }
  }
  return out;
}

void CompareNames(const Profile& base, const Profile& cand,
                  const DiffOptions& options, SessionDiff* out) {
  std::vector<NamedChange> changed[3];
  for (const NameSeries& c : cand.names) {
    const auto it = base.name_index.find(std::make_pair(c.kind, c.name));
    if (it == base.name_index.end()) {
      out->appeared.push_back(ChangeOf(base, cand, nullptr, &c, options));
    } else {
      changed[static_cast<int>(c.kind)].push_back(
          ChangeOf(base, cand, &base.names[it->second], &c, options));
    }
  }
  for (const NameSeries& b : base.names) {
    if (!cand.name_index.contains(std::make_pair(b.kind, b.name))) {
      out->vanished.push_back(ChangeOf(base, cand, &b, nullptr, options));
    }
  }
  auto by_size = [](const NamedChange& x, const NamedChange& y) {
    const double dx = std::abs(x.figure.delta_ns());
    const double dy = std::abs(y.figure.delta_ns());
    return dx != dy ? dx > dy : x.figure.name < y.figure.name;
  };
  for (auto& list : changed) {
    std::sort(list.begin(), list.end(), by_size);
    if (options.top > 0 && list.size() > options.top) list.resize(options.top);
    for (NamedChange& c : list) out->changes.push_back(std::move(c));
  }
  std::stable_sort(out->changes.begin(), out->changes.end(), by_size);
  std::sort(out->appeared.begin(), out->appeared.end(), by_size);
  std::sort(out->vanished.begin(), out->vanished.end(), by_size);
}

// A compile's identity across sessions: its signature, else graph hash.
std::string CompileKey(const CompileEvent& c) {
  return !c.signature.empty() ? c.signature : c.graph_hash;
}

void CompareCompiles(const Profile& base, const Profile& cand,
                     SessionDiff* out) {
  RecompileDiff& r = out->recompiles;
  r.base_misses = base.compiles.misses;
  r.cand_misses = cand.compiles.misses;
  r.base_late = base.compiles.late_misses;
  r.cand_late = cand.compiles.late_misses;
  absl::flat_hash_set<std::string> known;
  for (const CompileEvent& c : base.compiles.compiles)
    known.insert(CompileKey(c));
  for (const CompileEvent& c : cand.compiles.compiles) {
    if (c.cache_hit.value_or(false)) continue;
    const std::string key = CompileKey(c);
    if (known.contains(key)) continue;
    std::string text = absl::StrCat("rank ", c.rank);
    if (c.step >= 0) absl::StrAppend(&text, " step ", c.step);
    absl::StrAppend(&text, ": ", key.empty() ? "(no signature)" : key);
    if (c.late) absl::StrAppend(&text, " (late)");
    r.new_misses.push_back(std::move(text));
  }
}

}  // namespace

SessionDiff DiffSessions(const TraceStore& baseline,
                         const TraceStore& candidate,
                         const DiffOptions& options) {
  SessionDiff out;
  const Profile base = BuildProfile(baseline, options);
  const Profile cand = BuildProfile(candidate, options);
  out.base_steps = base.kept();
  out.cand_steps = cand.kept();
  out.matched_by_number =
      base.steps.matched_by_number && cand.steps.matched_by_number;
  out.step_median = Compare("step_ms.median", base.job_step, cand.job_step,
                            Statistic::kMedian, options);
  out.step_p90 = Compare("step_ms.p90", base.job_step, cand.job_step,
                         Statistic::kP90, options);
  CompareRanks(base, cand, options, &out);
  for (int c = 0; c < kStepCategoryCount; ++c) {
    out.categories.push_back(
        Compare("category:" +
                    std::string(StepCategoryName(static_cast<StepCategory>(c))),
                CategorySeries(base, c), CategorySeries(cand, c),
                Statistic::kMean, options));
  }
  CompareNames(base, cand, options, &out);
  CompareCompiles(base, cand, &out);
  return out;
}

}  // namespace podscope::viewer
