// Pieces the pod analyses (analysis_*.cc) share: typed argument lookup that
// tolerates missing keys and wrong types, which slices are collectives,
// steps and data loading, interval unions, and finding the step around a
// time. Private to viewer/core.
#ifndef PODSCOPE_VIEWER_CORE_SRC_ANALYSIS_POD_UTIL_H_
#define PODSCOPE_VIEWER_CORE_SRC_ANALYSIS_POD_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::pod {

// The store string ids of the argument keys the analyses read (nullopt:
// no event uses the key).
struct Keys {
  explicit Keys(const TraceStore& store);
  std::optional<StringId> step, step_num, wait_ns, collective_id, graph_hash,
      cache_hit, signature, graph_ops, flops, bytes_accessed, op, buffer_id,
      bytes, in_use, scope;
};

const trace_format::Arg* FindArg(const trace_format::EventArgs* args,
                                 std::optional<StringId> key);
// An int64 value, or a double that is a whole number.
std::optional<int64_t> IntArg(const trace_format::EventArgs* args,
                              std::optional<StringId> key);
std::optional<double> NumberArg(const trace_format::EventArgs* args,
                                std::optional<StringId> key);
// A string value as it is; a number spelled in decimal.
std::optional<std::string> TextArg(const TraceStore& store,
                                   const trace_format::EventArgs* args,
                                   std::optional<StringId> key);

int64_t NonNegative(int64_t v);

// A slice of the store as one number: its track in the high 32 bits and
// its index in the low (the `id` of `podscope query`'s slices table).
inline uint64_t SliceKey(TrackId track, uint32_t index) {
  return (uint64_t{track} << 32) | index;
}
inline uint64_t SliceKey(const EventRef& e) {
  return SliceKey(e.track, e.index);
}
// Collective by name (AllReduce, Broadcast, ..., nccl kernels).
bool IsCollectiveName(std::string_view name);

// The args of a track's events visited in ascending (kind, index) order:
// a walk over the sorted args instead of a search per event. A visit out
// of order searches again.
class ArgsCursor {
 public:
  explicit ArgsCursor(const std::vector<trace_format::EventArgs>& args)
      : args_(&args) {}
  const trace_format::EventArgs* Find(trace_format::EventKind kind,
                                      uint32_t index) {
    const auto key = std::make_pair(kind, index);
    const std::vector<trace_format::EventArgs>& a = *args_;
    auto at = [&](size_t p) { return std::make_pair(a[p].kind, a[p].index); };
    if (pos_ > 0 && pos_ <= a.size() && !(at(pos_ - 1) < key)) {
      pos_ = static_cast<size_t>(
          std::lower_bound(a.begin(), a.end(), key,
                           [](const trace_format::EventArgs& x, const auto& k) {
                             return std::make_pair(x.kind, x.index) < k;
                           }) -
          a.begin());
    }
    while (pos_ < a.size() && at(pos_) < key) ++pos_;
    return pos_ < a.size() && at(pos_) == key ? &a[pos_] : nullptr;
  }

 private:
  const std::vector<trace_format::EventArgs>* args_;
  size_t pos_ = 0;
};

// Caches a per-name decision: one byte per string of the store.
class NameFlags {
 public:
  template <typename Fn>
  bool Get(const TraceStore& store, StringId name, Fn&& decide) {
    if (name >= flags_.size()) {
      flags_.resize(std::max<size_t>(store.string_count(), name + size_t{1}),
                    kUnknown);
    }
    uint8_t& f = flags_[name];
    if (f == kUnknown) f = decide(store.str(name)) ? 1 : 0;
    return f == 1;
  }

 private:
  static constexpr uint8_t kUnknown = 2;
  std::vector<uint8_t> flags_;
};

// A collective: the name says so, or the slice has a `collective_id` or
// `wait_ns` argument.
class CollectiveTest {
 public:
  CollectiveTest(const TraceStore& store, const Keys& keys)
      : store_(store), keys_(keys) {}
  bool operator()(const EventRef& e, StringId name);

 private:
  const TraceStore& store_;
  const Keys& keys_;
  NameFlags by_name_;
};

bool IsThread(const TrackInfo& t);
bool IsDevice(const TrackInfo& t);

struct Interval {
  int64_t start = 0;
  int64_t end = 0;
};
// Sorts and merges (touching intervals join); drops empty ones.
std::vector<Interval> Union(std::vector<Interval> v);
int64_t Length(const std::vector<Interval>& u);
// Length of the intersection of two unions.
int64_t Overlap(const std::vector<Interval>& a, const std::vector<Interval>& b);

// The steps of one rank, by start (see pod_analysis.h for which slices).
struct RankStep {
  EventRef event;
  int64_t start = 0;  // the step slice
  int64_t end = 0;
  int64_t number = -1;
  // The step's window (pod_analysis.h): the slice, extended to the end of
  // the device work it launched, and starting no earlier than the previous
  // step's window ends.
  int64_t window_start = 0;
  int64_t window_end = 0;
};
std::vector<RankStep> FindRankSteps(const TraceStore& store, ProcessId p,
                                    const Keys& keys);
// Sets the steps' windows (steps by start): each step slice extended to
// the end of the device work its launches started (the executions that
// its flows reach on the rank's device streams, each running until the
// next execution on its stream starts), and starting no earlier than the
// previous window's end, so an asynchronous runtime's steps are the time
// the device spent on them, and a synchronous one's are its slices.
void ExtendToDeviceWork(const TraceStore& store, ProcessId p,
                        std::vector<RankStep>* steps);

// Finds the step row around a time on a rank.
class StepLocator {
 public:
  explicit StepLocator(const StepBreakdown& steps);
  // The row whose window on `rank` holds t, or -1.
  int Find(int rank, int64_t t) const;

 private:
  struct Window {
    int64_t start, end;
    int row;
  };
  std::vector<std::vector<Window>> by_rank_;  // by start
};

// Per category, intervals of a rank whose union is the time the rank spent
// in it (only the union is defined: an interval inside another of its
// category may or may not be listed): what the step breakdown and the
// overlap use. `steps` are the rank's steps, so that step slices and
// slices enclosing them are left out of host work. Without `with_threads`
// only the device categories (compute and collectives) are collected.
struct RankIntervals {
  std::vector<Interval> of[kStepCategoryCount];
};
RankIntervals CollectRankIntervals(const TraceStore& store, ProcessId p,
                                   const Keys& keys,
                                   const std::vector<RankStep>& steps,
                                   bool with_threads = true);

// Name -> summed duration of the scopes of a rank that start in
// [t0, t1): thread slices other than the steps and their enclosers, and
// device compute slices.
absl::flat_hash_map<StringId, int64_t> ScopeTimes(const TraceStore& store,
                                                  ProcessId p, const Keys& keys,
                                                  int64_t t0, int64_t t1,
                                                  int64_t step_start,
                                                  int64_t step_end);

// ------------------------------------------------ the analyses in parts
//
// AnalyzePod over a whole store, or a host at a time (analysis_by_host.cc):
// what each rank's events give is measured on a store holding that rank
// (its cells, arrivals and compiles, with ranks and events of that store),
// and what joins ranks is computed once from all of it.

// Per process of the store, its steps by start with their windows and
// categories.
using RankCells = std::vector<std::vector<StepCell>>;
RankCells MeasureRankSteps(const TraceStore& store);
// Matches the ranks' steps into rows and sums them (`cells` per rank).
StepBreakdown BuildStepBreakdown(std::vector<RankInfo> ranks,
                                 const RankCells& cells);

// One collective slice on a rank's device, with what joins it to the
// other ranks' slices of the same collective.
struct Arrival {
  CollectiveArrival a;
  std::string name;
  std::optional<std::string> id;
};
// Per process of the store, its collective slices by start (`a.rank` is
// the process).
std::vector<std::vector<Arrival>> FindAllArrivals(const TraceStore& store);
// Joins the ranks' arrivals (one list per rank of `steps`), charges the
// late ones, and runs the straggler test. The straggler, when named, has
// no longer scopes yet: `straggler_rows` receives the rows it was last in.
StragglerReport JoinStragglers(
    const StepBreakdown& steps,
    const std::vector<std::vector<Arrival>>& arrivals,
    const PodAnalysisOptions& options, std::vector<int>* straggler_rows);

// A step's scope times on one rank by name (ScopeTimes, named).
using NamedTimes = absl::flat_hash_map<std::string, int64_t>;
NamedTimes CellScopeTimes(const TraceStore& store, ProcessId p,
                          const Keys& keys, const StepCell& cell);
// What the longer scopes of a straggler need of one step row: its own
// times, and for each of its names every other rank's (0 when it had none).
struct RowScopes {
  int64_t step = 0;
  NamedTimes own;
  absl::flat_hash_map<std::string, std::vector<int64_t>> others;
  size_t other_ranks = 0;
  // Adds another rank's times of this row.
  void AddOther(const NamedTimes& times);
};
std::vector<LongerScope> LongerScopesOf(const std::vector<RowScopes>& rows,
                                        const PodAnalysisOptions& options);

// A Compile slice as found, before the steps place it.
struct FoundCompile {
  CompileEvent e;  // rank: the process; no step, row or verdict yet
  std::optional<int64_t> step_arg;
};
// Per process, in time order.
std::vector<FoundCompile> FindCompiles(const TraceStore& store);
// Places the compiles (by rank, then time) in the steps and judges them.
CompileReport JudgeCompiles(const StepBreakdown& steps,
                            std::vector<FoundCompile> found,
                            const PodAnalysisOptions& options);

// For the structs' rank labels.
int RankOfProcess(ProcessId p);

// The straggler test over a report whose collectives and per-rank totals
// are measured (analysis_straggler_stats.cc).
StragglerTest RunStragglerTest(const StepBreakdown& steps,
                               const StragglerReport& report);

}  // namespace podscope::viewer::pod

#endif  // PODSCOPE_VIEWER_CORE_SRC_ANALYSIS_POD_UTIL_H_
