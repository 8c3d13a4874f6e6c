// query_fast.h: the groups as SQLite's rows. A sum is exact in 128 bits
// beside the sum of its absolute values, which says whether SQLite's own
// summation, in whatever order it adds, gives the same number: while that
// stays within 2^53 every partial sum of a double is exact, and within
// 2^63 no partial int64 sum overflows. Past either, SQLite answers.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "query_fast_groups.h"
#include "query_tables.h"

namespace podscope::viewer::query {
namespace {

constexpr size_t kMaxValues = size_t{1} << 22;

// SQLite's order of values: NULL, numbers, text (bytes, then length).
int CompareValues(const QueryValue& a, const QueryValue& b) {
  auto rank = [](const QueryValue& v) {
    return std::holds_alternative<std::monostate>(v) ? 0
           : std::holds_alternative<std::string>(v)  ? 2
                                                     : 1;
  };
  const int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 0) return 0;
  if (ra == 2) {
    const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  const auto* ia = std::get_if<int64_t>(&a);
  const auto* ib = std::get_if<int64_t>(&b);
  if (ia && ib) return *ia < *ib ? -1 : *ia > *ib ? 1 : 0;
  // Results of one column share a type; a mix compares as doubles only
  // where the values are small enough to be exact.
  const double da = ia ? static_cast<double>(*ia) : std::get<double>(a);
  const double db = ib ? static_cast<double>(*ib) : std::get<double>(b);
  return da < db ? -1 : da > db ? 1 : 0;
}

QueryValue KeyValue(const TraceStore& store,
                    const std::vector<TrackId>& class_track,
                    const GroupKey& key, FastColumn column) {
  const TrackId t = class_track.empty() ? 0 : class_track[key.track_class];
  switch (column) {
    case FastColumn::kName:
      return std::string(store.str(key.name));
    case FastColumn::kDepth:
      return int64_t{key.depth};
    case FastColumn::kTrack:
      return int64_t{t};
    default:
      break;
  }
  if (t >= store.tracks().size()) return {};
  const TrackInfo& track = store.tracks()[t];
  const ProcessInfo& p = store.processes()[track.process];
  switch (column) {
    case FastColumn::kHost:
      return p.host_name;
    case FastColumn::kThread:
      return track.name;
    case FastColumn::kRank:
      return RankOf(store, p.id);
    case FastColumn::kPid:
      return p.pid;
    default:
      return {};
  }
}

std::vector<QueryValue> Values(const TraceStore& store, const FastPlan& plan,
                               const std::vector<TrackId>& class_track,
                               const GroupKey& key, const Acc& acc,
                               bool* exact) {
  std::vector<QueryValue> out;
  out.reserve(plan.outputs.size());
  for (const FastOutput& o : plan.outputs) {
    if (o.agg == FastAgg::kNone) {
      out.push_back(KeyValue(store, class_track, key, o.column));
      continue;
    }
    if (o.agg == FastAgg::kCount) {
      out.emplace_back(acc.count);
      continue;
    }
    const Stat& s = acc.stat[StatOf(o.column)];
    const bool none = acc.count == 0;
    switch (o.agg) {
      case FastAgg::kSum:
        if (s.abs > uint128(kMax)) *exact = false;
        out.emplace_back(none ? QueryValue() : QueryValue(int64_t(s.sum)));
        break;
      case FastAgg::kTotal:
      case FastAgg::kAvg: {
        if (s.abs > (uint128(1) << 53)) *exact = false;
        // Exact: |sum| <= abs <= 2^53.
        const double sum = static_cast<double>(s.sum);
        if (o.agg == FastAgg::kTotal) {
          out.emplace_back(sum);
        } else {
          out.emplace_back(
              none ? QueryValue()
                   : QueryValue(sum / static_cast<double>(acc.count)));
        }
        break;
      }
      case FastAgg::kMin:
        out.emplace_back(none ? QueryValue() : QueryValue(s.min));
        break;
      case FastAgg::kMax:
        out.emplace_back(none ? QueryValue() : QueryValue(s.max));
        break;
      default:
        out.emplace_back();
    }
  }
  return out;
}

}  // namespace

bool EmitRows(const TraceStore& store, const FastPlan& plan,
              const std::vector<TrackId>& class_track, Groups groups,
              const std::function<bool(const std::vector<QueryValue>&)>& row) {
  struct Row {
    std::vector<QueryValue> group;   // the GROUP BY terms' values
    std::vector<QueryValue> values;  // the outputs'
  };
  // The rows are held whole to be sorted; a result that large is left to
  // SQLite's sorter, which can spill.
  if (groups.size() * (plan.outputs.size() + plan.group_by.size()) >
      kMaxValues) {
    return false;
  }
  bool exact = true;
  std::vector<Row> rows;
  rows.reserve(groups.size());
  for (const auto& [key, acc] : groups) {
    Row r;
    for (FastColumn g : plan.group_by)
      r.group.push_back(KeyValue(store, class_track, key, g));
    r.values = Values(store, plan, class_track, key, acc, &exact);
    if (!exact) return false;
    rows.push_back(std::move(r));
  }
  groups = Groups();
  // SQLite sorts the rows by the GROUP BY terms to group them, then sorts
  // the result stably by ORDER BY: ties keep the groups' order. When both
  // lists have as many terms, it first gives the i-th GROUP BY term the
  // direction of the i-th ORDER BY term (whatever either term is), hoping
  // to make the second sort unnecessary.
  std::vector<bool> group_desc(plan.group_by.size(), false);
  if (plan.order_by.size() == plan.group_by.size()) {
    for (size_t i = 0; i < group_desc.size(); ++i) {
      group_desc[i] = plan.order_by[i].desc;
    }
  }
  std::sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    for (size_t i = 0; i < a.group.size(); ++i) {
      const int c = CompareValues(a.group[i], b.group[i]);
      if (c != 0) return group_desc[i] ? c > 0 : c < 0;
    }
    return false;
  });
  if (!plan.order_by.empty()) {
    std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
      for (const FastOrder& o : plan.order_by) {
        const int c = CompareValues(a.values[o.output], b.values[o.output]);
        if (c != 0) return o.desc ? c > 0 : c < 0;
      }
      return false;
    });
  }
  const size_t first =
      static_cast<size_t>(std::min<uint64_t>(plan.offset, rows.size()));
  size_t last = rows.size();
  if (plan.limit && static_cast<uint64_t>(*plan.limit) < last - first) {
    last = first + static_cast<size_t>(*plan.limit);
  }
  for (size_t r = first; r < last; ++r) {
    rows[r].values.resize(plan.visible);
    if (!row(rows[r].values)) break;
  }
  return true;
}

}  // namespace podscope::viewer::query
