// The critical path of a step across ranks (critical_path.h): each
// track's units in the step, then a walk back from the step's last event.
#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "analysis_pod_util.h"
#include "critical_path_units.h"
#include "podscope/base/strings.h"
#include "podscope/viewer/critical_path.h"

namespace podscope::viewer {
namespace {

using cp::CollectStepTracks;
using cp::StepWindow;
using cp::TrackUnits;
using cp::Unit;

StepCategory CategoryOf(const TraceStore& store, const TrackUnits& t,
                        const Unit& u, bool collective) {
  if (collective) return StepCategory::kCollectiveTransfer;
  if (t.device) return StepCategory::kCompute;
  const std::string_view name = store.str(store.NameOf(u.event));
  if (base::ContainsIgnoreCase(name, "loader") ||
      base::ContainsIgnoreCase(store.tracks()[t.track].name, "loader")) {
    return StepCategory::kDataLoading;
  }
  return StepCategory::kHost;
}

// What every step's walk shares: the arg keys and each collective
// arrival's slice, indexed once for all the rows instead of per row.
struct Shared {
  Shared(const TraceStore& store, const StragglerReport& stragglers)
      : keys(store), collectives(&stragglers.collectives) {
    for (size_t k = 0; k < stragglers.collectives.size(); ++k) {
      for (const CollectiveArrival& a : stragglers.collectives[k].arrivals) {
        collective_of[pod::SliceKey(a.event)] = k;
      }
    }
  }
  const pod::Keys keys;
  const std::vector<JoinedCollective>* collectives;
  // A slice (pod::SliceKey) -> its collective.
  absl::flat_hash_map<uint64_t, size_t> collective_of;
};

// A thread's storage for the rows it walks, kept from row to row.
struct Scratch {
  std::vector<TrackUnits> tracks;  // [0, used) hold this row's
  size_t used = 0;
  std::vector<int32_t> index_of;  // TrackId -> index in tracks, -1: none
};

class Walker {
 public:
  Walker(const TraceStore& store, const StepBreakdown& steps,
         const Shared& shared, int row, Scratch* scratch)
      : store_(store),
        steps_(steps),
        row_(row),
        scratch_(*scratch),
        is_collective_(store, shared.keys),
        collectives_(shared.collectives),
        collective_of_(shared.collective_of) {}

  CriticalPath Run();

 private:
  void CollectTracks();
  const Unit* Covering(const TrackUnits& t, int64_t at) const;
  const Unit* Before(const TrackUnits& t, int64_t at) const;
  // The host slice that launched device op `u` (a flow from a thread of
  // the same process), if any.
  std::optional<EventRef> Launch(const TrackUnits& t, const Unit& u) const;
  TrackUnits* FindTrack(TrackId id);
  void Emit(const TrackUnits& t, std::string name, StepCategory c, int64_t a,
            int64_t b, const Unit* u, std::string note);

  const TraceStore& store_;
  const StepBreakdown& steps_;
  const int row_;
  Scratch& scratch_;
  pod::CollectiveTest is_collective_;
  const std::vector<JoinedCollective>* collectives_;
  const absl::flat_hash_map<uint64_t, size_t>& collective_of_;
  int64_t w0_ = 0, w1_ = 0;
  std::vector<PathSegment> backwards_;
};

void Walker::CollectTracks() {
  Scratch& s = scratch_;
  for (size_t i = 0; i < s.used; ++i) s.index_of[s.tracks[i].track] = -1;
  CollectStepTracks(store_, steps_, row_, w0_, w1_, &s.tracks, &s.used);
  s.index_of.resize(store_.tracks().size(), -1);
  for (size_t i = 0; i < s.used; ++i) {
    s.index_of[s.tracks[i].track] = static_cast<int32_t>(i);
  }
}

const Unit* Walker::Covering(const TrackUnits& t, int64_t at) const {
  // The last unit starting before `at`; it covers `at` when it ends at or
  // after it.
  auto it =
      std::lower_bound(t.units.begin(), t.units.end(), at,
                       [](const Unit& u, int64_t v) { return u.start < v; });
  if (it == t.units.begin()) return nullptr;
  --it;
  return it->end >= at ? &*it : nullptr;
}

const Unit* Walker::Before(const TrackUnits& t, int64_t at) const {
  auto it =
      std::upper_bound(t.units.begin(), t.units.end(), at,
                       [](int64_t v, const Unit& u) { return v < u.end; });
  if (it == t.units.begin()) return nullptr;
  return &*(it - 1);
}

std::optional<EventRef> Walker::Launch(const TrackUnits& t,
                                       const Unit& u) const {
  if (!t.device) return std::nullopt;
  const ProcessId p = store_.tracks()[t.track].process;
  std::optional<EventRef> best;
  for (const TraceStore::FlowEnd& f : store_.Flows(u.event)) {
    if (f.event.kind != trace_format::EventKind::kSlice) continue;
    const TrackInfo& other = store_.tracks()[f.event.track];
    if (other.process != p || !pod::IsThread(other)) continue;
    if (!best || store_.StartOf(f.event) > store_.StartOf(*best)) {
      best = f.event;
    }
  }
  return best;
}

TrackUnits* Walker::FindTrack(TrackId id) {
  if (id >= scratch_.index_of.size() || scratch_.index_of[id] < 0) {
    return nullptr;
  }
  return &scratch_.tracks[scratch_.index_of[id]];
}

void Walker::Emit(const TrackUnits& t, std::string name, StepCategory c,
                  int64_t a, int64_t b, const Unit* u, std::string note) {
  if (b <= a) return;
  PathSegment s;
  s.rank = steps_.ranks[t.rank].rank;
  s.track = t.track;
  s.track_name = store_.tracks()[t.track].name;
  s.name = std::move(name);
  s.category = c;
  s.start_ns = a;
  s.end_ns = b;
  if (u != nullptr) {
    s.has_event = true;
    s.event = u->event;
  }
  s.note = std::move(note);
  // Consecutive idle stretches of one track are one.
  if (!backwards_.empty() && c == StepCategory::kIdle &&
      backwards_.back().category == StepCategory::kIdle &&
      backwards_.back().track == t.track && backwards_.back().start_ns == b) {
    backwards_.back().start_ns = a;
    return;
  }
  backwards_.push_back(std::move(s));
}

CriticalPath Walker::Run() {
  CriticalPath out;
  out.row = row_;
  const StepRow& row = steps_.rows[row_];
  out.step = row.step;
  std::tie(w0_, w1_) = StepWindow(steps_, row_);
  out.by_rank.assign(steps_.ranks.size(), 0);
  if (w1_ <= w0_) return out;
  out.start_ns = w0_;
  out.end_ns = w1_;
  CollectTracks();
  // The step ends with the unit that ends last.
  TrackUnits* at = nullptr;
  int64_t t = std::numeric_limits<int64_t>::min();
  const auto tracks = absl::MakeSpan(scratch_.tracks.data(), scratch_.used);
  for (TrackUnits& tu : tracks) {
    if (tu.units.back().end > t) {
      t = tu.units.back().end;
      at = &tu;
    }
  }
  if (at == nullptr) return out;
  size_t budget = 16;
  for (const TrackUnits& tu : tracks) budget += 4 * tu.units.size();
  while (t > w0_ && budget-- > 0) {
    const Unit* u = Covering(*at, t);
    if (u == nullptr) {
      const Unit* prev = Before(*at, t);
      const int64_t from = prev ? std::max(prev->end, w0_) : w0_;
      Emit(*at, "(idle)", StepCategory::kIdle, from, t, nullptr, "");
      if (prev == nullptr || from >= t) break;
      t = from;
      continue;
    }
    const std::string name(store_.str(store_.NameOf(u->event)));
    auto joined = collective_of_.find(pod::SliceKey(u->event));
    if (joined != collective_of_.end()) {
      const JoinedCollective& c = (*collectives_)[joined->second];
      const CollectiveArrival* last = nullptr;
      for (const CollectiveArrival& a : c.arrivals) {
        if (a.rank == c.last_rank) last = &a;
      }
      if (last != nullptr && last->rank != static_cast<int>(at->rank) &&
          last->start_ns > u->start) {
        // This rank waited: the path goes on from the last arrival.
        const int64_t from = std::min(std::max(last->start_ns, w0_), t);
        const int last_rank = steps_.ranks[last->rank].rank;
        Emit(*at, name, StepCategory::kCollectiveTransfer, from, t, u,
             absl::StrCat("waited for rank ", last_rank, " in ", c.name, " ",
                          c.key));
        TrackUnits* next = FindTrack(last->event.track);
        if (next == nullptr) break;
        at = next;
        t = from;
        continue;
      }
    }
    const StepCategory cat =
        CategoryOf(store_, *at, *u,
                   joined != collective_of_.end() ||
                       is_collective_(u->event, store_.NameOf(u->event)));
    Emit(*at, name, cat, std::max(u->start, w0_), t, u, "");
    if (u->start <= w0_) break;
    // What let it start: the previous unit on its track, or its launch.
    const Unit* prev = Before(*at, u->start);
    const int64_t prev_end =
        prev ? prev->end : std::numeric_limits<int64_t>::min();
    if (const auto launch = Launch(*at, *u)) {
      const int64_t launched = std::min(
          store_.StartOf(*launch) + store_.DurationOf(*launch), u->start);
      TrackUnits* host = FindTrack(launch->track);
      if (host != nullptr && launched > prev_end) {
        Emit(*at, "(waiting for launch)", StepCategory::kIdle, launched,
             u->start, nullptr, "");
        at = host;
        t = launched;
        continue;
      }
    }
    t = u->start;
  }
  std::reverse(backwards_.begin(), backwards_.end());
  out.segments = std::move(backwards_);
  for (const PathSegment& s : out.segments) {
    out.by_category[static_cast<int>(s.category)] += s.duration_ns();
    for (size_t r = 0; r < steps_.ranks.size(); ++r) {
      if (steps_.ranks[r].rank == s.rank) out.by_rank[r] += s.duration_ns();
    }
  }
  return out;
}

}  // namespace

CriticalPath AnalyzeCriticalPath(const TraceStore& store,
                                 const StepBreakdown& steps,
                                 const StragglerReport& stragglers, int row) {
  if (row < 0 || static_cast<size_t>(row) >= steps.rows.size()) return {};
  const Shared shared(store, stragglers);
  Scratch scratch;
  return Walker(store, steps, shared, row, &scratch).Run();
}

void ForEachCriticalPath(
    const TraceStore& store, const StepBreakdown& steps,
    const StragglerReport& stragglers, int threads,
    const std::function<void(int row, CriticalPath path)>& visit) {
  const Shared shared(store, stragglers);
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
  }
  // Rows are independent; a shared counter hands them out so a thread that
  // drew short steps takes more of them.
  const size_t rows = steps.rows.size();
  const size_t n = std::min<size_t>(std::max(threads, 1), rows);
  std::atomic<size_t> next{0};
  auto work = [&] {
    Scratch scratch;
    for (size_t row = next++; row < rows; row = next++) {
      const int r = static_cast<int>(row);
      visit(r, Walker(store, steps, shared, r, &scratch).Run());
    }
  };
  std::vector<std::thread> pool;
  for (size_t i = 1; i < n; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

std::vector<CriticalPath> AnalyzeCriticalPaths(
    const TraceStore& store, const StepBreakdown& steps,
    const StragglerReport& stragglers, int threads) {
  std::vector<CriticalPath> out(steps.rows.size());
  ForEachCriticalPath(
      store, steps, stragglers, threads,
      [&](int row, CriticalPath path) { out[row] = std::move(path); });
  return out;
}

}  // namespace podscope::viewer
