// query_fast.h's groups, between the scan (query_fast_exec.cc) and the
// rows (query_fast_rows.cc).
#ifndef PODSCOPE_VIEWER_CORE_SRC_QUERY_FAST_GROUPS_H_
#define PODSCOPE_VIEWER_CORE_SRC_QUERY_FAST_GROUPS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "query_fast.h"

namespace podscope::viewer::query {

using int128 = __int128;
using uint128 = unsigned __int128;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Aggregated integer columns: the two read slice by slice, then those
// constant over a run.
enum StatColumn {
  kStatTs,
  kStatDur,
  kStatDepth,
  kStatRank,
  kStatPid,
  kStatTrack,
  kStatCount
};

inline int StatOf(FastColumn c) {
  switch (c) {
    case FastColumn::kTs:
      return kStatTs;
    case FastColumn::kDur:
      return kStatDur;
    case FastColumn::kDepth:
      return kStatDepth;
    case FastColumn::kRank:
      return kStatRank;
    case FastColumn::kPid:
      return kStatPid;
    case FastColumn::kTrack:
      return kStatTrack;
    default:
      return -1;
  }
}

inline uint128 Magnitude(int64_t v) {
  return v < 0 ? uint128(-(int128(v))) : uint128(v);
}

struct Stat {
  int128 sum = 0;
  uint128 abs = 0;
  int64_t min = kMax;
  int64_t max = kMin;
  void Add(int64_t v) {
    sum += v;
    abs += Magnitude(v);
    min = std::min(min, v);
    max = std::max(max, v);
  }
  void AddRepeated(int64_t v, int64_t n) {
    if (n <= 0) return;
    sum += int128(v) * n;
    abs += Magnitude(v) * uint128(n);
    min = std::min(min, v);
    max = std::max(max, v);
  }
  void Merge(const Stat& o) {
    sum += o.sum;
    abs += o.abs;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
  }
};

struct Acc {
  int64_t count = 0;
  Stat stat[kStatCount];
};

struct GroupKey {
  uint32_t track_class = 0;
  uint32_t depth = 0;
  uint32_t name = 0;
  friend bool operator==(const GroupKey&, const GroupKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const GroupKey& k) {
    return H::combine(std::move(h), k.track_class, k.depth, k.name);
  }
};

using Groups = absl::flat_hash_map<GroupKey, Acc>;

// Turns the groups into the statement's rows (the SELECT list's values),
// ordered and limited as SQLite orders and limits them, and passes them to
// `row`. `class_track` holds a track of each class. False, with no row
// passed, when a value is not the one SQLite would compute exactly, or the
// result is too large to hold.
bool EmitRows(const TraceStore& store, const FastPlan& plan,
              const std::vector<TrackId>& class_track, Groups groups,
              const std::function<bool(const std::vector<QueryValue>&)>& row);

}  // namespace podscope::viewer::query

#endif  // PODSCOPE_VIEWER_CORE_SRC_QUERY_FAST_GROUPS_H_
