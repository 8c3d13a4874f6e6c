// Shared pieces of the pod analyses: argument lookup, slice classes,
// interval unions, step finding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"
#include "podscope/base/strings.h"
#include "podscope/viewer/step_names.h"

namespace podscope::viewer::pod {

Keys::Keys(const TraceStore& store)
    : step(store.FindString("step")),
      step_num(store.FindString("step_num")),
      wait_ns(store.FindString("wait_ns")),
      collective_id(store.FindString("collective_id")),
      graph_hash(store.FindString("graph_hash")),
      cache_hit(store.FindString("cache_hit")),
      signature(store.FindString("signature")),
      graph_ops(store.FindString("graph_ops")),
      flops(store.FindString("flops")),
      bytes_accessed(store.FindString("bytes_accessed")),
      op(store.FindString("op")),
      buffer_id(store.FindString("buffer_id")),
      bytes(store.FindString("bytes")),
      in_use(store.FindString("in_use")),
      scope(store.FindString("scope")) {}

const trace_format::Arg* FindArg(const trace_format::EventArgs* args,
                                 std::optional<StringId> key) {
  if (args == nullptr || !key.has_value()) return nullptr;
  for (const trace_format::Arg& a : args->args) {
    if (a.key == *key) return &a;
  }
  return nullptr;
}

std::optional<int64_t> IntArg(const trace_format::EventArgs* args,
                              std::optional<StringId> key) {
  const trace_format::Arg* a = FindArg(args, key);
  if (a == nullptr) return std::nullopt;
  if (const int64_t* v = std::get_if<int64_t>(&a->value)) return *v;
  if (const double* d = std::get_if<double>(&a->value)) {
    if (std::isfinite(*d) && std::trunc(*d) == *d && std::fabs(*d) < 9.2e18) {
      return static_cast<int64_t>(*d);
    }
  }
  return std::nullopt;
}

std::optional<double> NumberArg(const trace_format::EventArgs* args,
                                std::optional<StringId> key) {
  const trace_format::Arg* a = FindArg(args, key);
  if (a == nullptr) return std::nullopt;
  if (const int64_t* v = std::get_if<int64_t>(&a->value)) {
    return static_cast<double>(*v);
  }
  if (const double* d = std::get_if<double>(&a->value)) {
    if (std::isfinite(*d)) return *d;
  }
  return std::nullopt;
}

std::optional<std::string> TextArg(const TraceStore& store,
                                   const trace_format::EventArgs* args,
                                   std::optional<StringId> key) {
  const trace_format::Arg* a = FindArg(args, key);
  if (a == nullptr) return std::nullopt;
  if (const auto* s = std::get_if<trace_format::StringId>(&a->value)) {
    return std::string(store.str(s->id));
  }
  if (const int64_t* v = std::get_if<int64_t>(&a->value)) {
    return std::to_string(*v);
  }
  if (const double* d = std::get_if<double>(&a->value)) {
    if (std::isfinite(*d) && std::trunc(*d) == *d && std::fabs(*d) < 9.2e18) {
      return std::to_string(static_cast<int64_t>(*d));
    }
    return std::to_string(*d);
  }
  return std::nullopt;
}

int64_t NonNegative(int64_t v) { return v < 0 ? 0 : v; }

bool IsCollectiveName(std::string_view name) {
  // Our runtime's and Gloo's names, exactly (an IR `broadcast` kernel is
  // not a collective).
  static constexpr std::string_view kExact[] = {
      "AllReduce", "Broadcast", "AllGather", "ReduceScatter",
      "AllToAll",  "Barrier",   "Reduce",    "Gather",
      "Scatter",   "Send",      "Recv"};
  for (std::string_view n : kExact) {
    if (name == n) return true;
  }
  // NCCL kernels (Kineto) and XLA's HLO collectives (XSpace).
  if (name.size() >= 4 && base::ContainsIgnoreCase(name.substr(0, 4), "nccl")) {
    return true;
  }
  static constexpr std::string_view kParts[] = {
      "AllReduce",      "AllGather",  "ReduceScatter",
      "AllToAll",       "all-reduce", "all-gather",
      "reduce-scatter", "all-to-all", "collective-permute"};
  for (std::string_view n : kParts) {
    if (name.find(n) != std::string_view::npos) return true;
  }
  return false;
}

bool CollectiveTest::operator()(const EventRef& e, StringId name) {
  if (by_name_.Get(store_, name, IsCollectiveName)) return true;
  if (!keys_.collective_id && !keys_.wait_ns) return false;
  const trace_format::EventArgs* args = store_.FindArgs(e);
  return FindArg(args, keys_.collective_id) != nullptr ||
         FindArg(args, keys_.wait_ns) != nullptr;
}

bool IsThread(const TrackInfo& t) {
  return t.kind == trace_format::proto::TRACK_KIND_THREAD;
}
bool IsDevice(const TrackInfo& t) {
  return t.kind == trace_format::proto::TRACK_KIND_DEVICE_STREAM;
}

std::vector<Interval> Union(std::vector<Interval> v) {
  std::erase_if(v, [](const Interval& i) { return i.end <= i.start; });
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start < b.start;
  });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t Length(const std::vector<Interval>& u) {
  int64_t n = 0;
  for (const Interval& i : u)
    n = base::SaturatingAdd(n, base::SaturatingSub(i.end, i.start));
  return n;
}

int64_t Overlap(const std::vector<Interval>& a,
                const std::vector<Interval>& b) {
  int64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const int64_t s = std::max(a[i].start, b[j].start);
    const int64_t e = std::min(a[i].end, b[j].end);
    if (e > s) n = base::SaturatingAdd(n, base::SaturatingSub(e, s));
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return n;
}

namespace {

// The number at the end of "ProfilerStep#12", or of "12".
std::optional<int64_t> NumberInName(std::string_view name) {
  size_t hash = name.rfind('#');
  std::string_view digits =
      hash == std::string_view::npos ? name : name.substr(hash + 1);
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(std::string(digits), &v)) return std::nullopt;
  return v;
}

bool StrictStepName(std::string_view name) {
  return name == "train_step" || name.starts_with("ProfilerStep#");
}

// The outermost slices of a track for which `is_step` holds.
template <typename Pred>
std::vector<RankStep> OutermostOf(const TraceStore& store, TrackId t,
                                  Pred&& is_step) {
  const SliceColumns& s = store.data(t).slices;
  std::vector<RankStep> found;
  for (uint32_t d = 0; d < s.depth_count(); ++d) {
    std::vector<RankStep> here;
    for (uint32_t i = s.depth_begin(d); i < s.depth_end(d); ++i) {
      const EventRef e{t, trace_format::EventKind::kSlice, i};
      if (!is_step(e, s.name(i))) continue;
      const int64_t start = s.start(i), end = s.end(i);
      // Inside an accepted step of a lower depth?
      auto it = std::upper_bound(
          found.begin(), found.end(), start,
          [](int64_t v, const RankStep& r) { return v < r.start; });
      if (it != found.begin() && std::prev(it)->end >= end &&
          std::prev(it)->start <= start) {
        continue;
      }
      here.push_back({e, start, end, -1});
    }
    if (here.empty()) continue;
    found.insert(found.end(), here.begin(), here.end());
    std::sort(
        found.begin(), found.end(),
        [](const RankStep& a, const RankStep& b) { return a.start < b.start; });
  }
  return found;
}

// The executions on one device stream: each starts at a slice that ends a
// flow (a launch's arrow) and runs until the next one starts.
class StreamExecutions {
 public:
  StreamExecutions(const TraceStore& store, TrackId track) {
    const TrackData& d = store.data(track);
    for (const trace_format::FlowLink& f : d.flows) {
      if (f.kind != trace_format::EventKind::kSlice ||
          f.phase == trace_format::FlowPhase::kBegin ||
          f.index >= d.slices.size()) {
        continue;
      }
      starts_.push_back(d.slices.start(f.index));
    }
    std::sort(starts_.begin(), starts_.end());
    starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
    slices_.reserve(d.slices.size());
    for (uint32_t i = 0; i < d.slices.size(); ++i) {
      slices_.push_back({d.slices.start(i), d.slices.end(i)});
    }
    std::sort(
        slices_.begin(), slices_.end(),
        [](const Interval& a, const Interval& b) { return a.start < b.start; });
  }

  // The end of the execution that starts at `t` (the last end of the
  // stream's slices that start before the next execution does).
  int64_t EndOf(int64_t t) const {
    auto next = std::upper_bound(starts_.begin(), starts_.end(), t);
    const int64_t limit =
        next == starts_.end() ? std::numeric_limits<int64_t>::max() : *next;
    int64_t end = t;
    for (auto it = std::lower_bound(
             slices_.begin(), slices_.end(), t,
             [](const Interval&a, int64_t v) { return a.start < v; });
         it != slices_.end() && it->start < limit; ++it) {
      end = std::max(end, it->end);
    }
    return end;
  }

 private:
  std::vector<int64_t> starts_;
  std::vector<Interval> slices_;
};

}  // namespace

void ExtendToDeviceWork(const TraceStore& store, ProcessId p,
                        std::vector<RankStep>* steps) {
  absl::flat_hash_map<TrackId, std::unique_ptr<StreamExecutions>> streams;
  int64_t previous_end = std::numeric_limits<int64_t>::min();
  // Flow origins of each step track, by start.
  absl::flat_hash_map<TrackId, std::vector<std::pair<int64_t, uint32_t>>>
      origins;
  for (RankStep& s : *steps) {
    int64_t device_end = s.end;
    const TrackId track = s.event.track;
    auto [it, fresh] = origins.try_emplace(track);
    if (fresh) {
      const TrackData& d = store.data(track);
      for (const trace_format::FlowLink& f : d.flows) {
        if (f.kind == trace_format::EventKind::kSlice &&
            f.phase != trace_format::FlowPhase::kEnd &&
            f.index < d.slices.size()) {
          it->second.push_back({d.slices.start(f.index), f.index});
        }
      }
      std::sort(it->second.begin(), it->second.end());
    }
    const auto& launches = it->second;
    // Launches inside the step: flow origins in [start, end).
    for (auto l = std::lower_bound(launches.begin(), launches.end(),
                                   std::make_pair(s.start, uint32_t{0}));
         l != launches.end() && l->first < s.end; ++l) {
      for (const TraceStore::FlowEnd& e :
           store.Flows({track, trace_format::EventKind::kSlice, l->second})) {
        if (e.phase == trace_format::FlowPhase::kBegin ||
            e.event.kind != trace_format::EventKind::kSlice) {
          continue;
        }
        const TrackInfo& target = store.tracks()[e.event.track];
        if (target.process != p || !IsDevice(target)) continue;
        auto& exec = streams[e.event.track];
        if (!exec) {
          exec = std::make_unique<StreamExecutions>(store, e.event.track);
        }
        device_end = std::max(device_end, exec->EndOf(store.StartOf(e.event)));
      }
    }
    s.window_start = std::max(s.start, previous_end);
    s.window_end = std::max(device_end, s.window_start);
    previous_end = s.window_end;
  }
}

std::vector<RankStep> FindRankSteps(const TraceStore& store, ProcessId p,
                                    const Keys& keys) {
  const ProcessInfo& proc = store.processes()[p];
  NameFlags strict_names, loose_names;
  std::optional<ArgsCursor> args_of;  // of the track being searched
  TrackId args_track = 0;
  auto strict = [&](const EventRef& e, StringId name) {
    if (strict_names.Get(store, name, StrictStepName)) return true;
    if (!keys.step_num) return false;
    if (!args_of || args_track != e.track) {
      args_of.emplace(store.data(e.track).args);
      args_track = e.track;
    }
    return FindArg(args_of->Find(e.kind, e.index), keys.step_num) != nullptr;
  };
  auto loose = [&](const EventRef&, StringId name) {
    return loose_names.Get(store, name, IsStepName);
  };
  std::vector<RankStep> best;
  for (int pass = 0; pass < 2 && best.empty(); ++pass) {
    for (TrackId t : proc.tracks) {
      const TrackInfo& info = store.tracks()[t];
      // XSpace step markers may sit on a line of any kind; the loose match
      // only looks at threads.
      if (pass == 1 && !IsThread(info)) continue;
      if (info.kind == trace_format::proto::TRACK_KIND_COUNTER) continue;
      std::vector<RankStep> steps = pass == 0 ? OutermostOf(store, t, strict)
                                              : OutermostOf(store, t, loose);
      if (steps.size() > best.size()) best = std::move(steps);
    }
  }
  for (RankStep& s : best) {
    const trace_format::EventArgs* args = store.FindArgs(s.event);
    std::optional<int64_t> n = IntArg(args, keys.step);
    if (!n) n = IntArg(args, keys.step_num);
    if (!n) n = NumberInName(store.str(store.NameOf(s.event)));
    s.number = n.value_or(-1);
    if (s.end < s.start) s.end = s.start;
  }
  ExtendToDeviceWork(store, p, &best);
  return best;
}

StepLocator::StepLocator(const StepBreakdown& steps)
    : by_rank_(steps.ranks.size()) {
  for (size_t r = 0; r < steps.rows.size(); ++r) {
    const StepRow& row = steps.rows[r];
    for (size_t k = 0; k < row.ranks.size() && k < by_rank_.size(); ++k) {
      const StepCell& c = row.ranks[k];
      if (!c.present) continue;
      by_rank_[k].push_back({c.start_ns,
                             base::SaturatingAdd(c.start_ns, c.duration_ns),
                             static_cast<int>(r)});
    }
  }
  for (auto& w : by_rank_) {
    std::sort(w.begin(), w.end(), [](const Window& a, const Window& b) {
      return a.start < b.start;
    });
  }
}

int StepLocator::Find(int rank, int64_t t) const {
  if (rank < 0 || static_cast<size_t>(rank) >= by_rank_.size()) return -1;
  const auto& w = by_rank_[rank];
  auto it =
      std::upper_bound(w.begin(), w.end(), t,
                       [](int64_t v, const Window& x) { return v < x.start; });
  if (it == w.begin()) return -1;
  --it;
  return t < it->end || (t == it->start) ? it->row : -1;
}

namespace {

// Whether [start, end) holds a whole step (steps by start, disjoint).
bool EnclosesStep(const std::vector<RankStep>& steps, int64_t start,
                  int64_t end) {
  auto it = std::lower_bound(
      steps.begin(), steps.end(), start,
      [](const RankStep& r, int64_t v) { return r.start < v; });
  return it != steps.end() && it->end <= end;
}

bool IsStepEvent(const std::vector<RankStep>& steps, const EventRef& e,
                 int64_t start) {
  auto it = std::lower_bound(
      steps.begin(), steps.end(), start,
      [](const RankStep& r, int64_t v) { return r.start < v; });
  for (; it != steps.end() && it->start == start; ++it) {
    if (it->event == e) return true;
  }
  return false;
}

bool IsLoaderName(std::string_view n) {
  return base::ContainsIgnoreCase(n, "loader");
}

}  // namespace

namespace {

// Whether a thread track may hold data loading: its name, or one of the
// names its slices use, says "loader". A track's name column lists the
// names it uses, so this reads each once instead of once a slice.
bool MayHoldLoading(const TraceStore& store, const TrackInfo& info,
                    const SliceColumns& s, NameFlags* loader_names) {
  if (IsLoaderName(info.name)) return true;
  if (s.names().bytes_per_name() == 4) return true;  // no table: ask per slice
  for (const StringId name : s.names().table()) {
    if (loader_names->Get(store, name, IsLoaderName)) return true;
  }
  return false;
}

// The outermost host and loading intervals of one thread track. Only the
// union of each category counts (CategoryTimeline, Union), so a slice
// inside a host interval already taken adds nothing and is passed over;
// the cover a depth is tested against is the host intervals that still
// hold slices of the depth above, not every slice inside them, so that a
// nested slice costs a test and no copy.
void CollectThreadIntervals(const TraceStore& store, TrackId t,
                            const std::vector<RankStep>& steps,
                            NameFlags* loader_names, RankIntervals* out) {
  const TrackInfo& info = store.tracks()[t];
  const SliceColumns& s = store.data(t).slices;
  auto& loading = out->of[static_cast<int>(StepCategory::kDataLoading)];
  auto& host = out->of[static_cast<int>(StepCategory::kHost)];
  const bool loader_track = IsLoaderName(info.name);
  const bool may_load = MayHoldLoading(store, info, s, loader_names);
  // Both covers are sorted by start; `inside` walks one along a depth's
  // slices, which come by start. It never says inside wrongly, so a cover
  // that misses an interval only costs a slice that adds nothing.
  std::vector<Interval> host_cover, load_cover, next_load, added;
  std::vector<uint8_t> holds;  // by host_cover index: a slice of this depth
  auto inside = [](const std::vector<Interval>& cover, size_t& k, int64_t start,
                   int64_t end) {
    while (k < cover.size() && cover[k].end < start) ++k;
    return k < cover.size() && cover[k].start <= start && end <= cover[k].end;
  };
  for (uint32_t d = 0; d < s.depth_count(); ++d) {
    size_t hk = 0, lk = 0;
    next_load.clear();
    added.clear();
    holds.assign(host_cover.size(), 0);
    for (uint32_t i = s.depth_begin(d); i < s.depth_end(d); ++i) {
      const int64_t start = s.start(i), end = std::max(start, s.end(i));
      if (may_load) {
        if (inside(load_cover, lk, start, end)) {
          next_load.push_back({start, end});
          continue;
        }
        if (loader_track || loader_names->Get(store, s.name(i), IsLoaderName)) {
          loading.push_back({start, end});
          next_load.push_back({start, end});
          continue;
        }
      }
      if (inside(host_cover, hk, start, end)) {
        holds[hk] = 1;
        continue;
      }
      const EventRef e{t, trace_format::EventKind::kSlice, i};
      if (IsStepEvent(steps, e, start) || EnclosesStep(steps, start, end)) {
        continue;
      }
      host.push_back({start, end});
      added.push_back({start, end});
    }
    // The next depth's cover: the intervals that held a slice of this
    // depth (a deeper slice lies inside one of this depth's), and the ones
    // this depth added. At most the depth's slices, so the whole walk stays
    // linear in the track's slices.
    std::vector<Interval> next_host;
    next_host.reserve(added.size() + host_cover.size());
    size_t a = 0;
    for (size_t k = 0; k < host_cover.size(); ++k) {
      if (!holds[k]) continue;
      while (a < added.size() && added[a].start < host_cover[k].start) {
        next_host.push_back(added[a++]);
      }
      next_host.push_back(host_cover[k]);
    }
    next_host.insert(next_host.end(), added.begin() + a, added.end());
    host_cover.swap(next_host);
    load_cover.swap(next_load);
  }
}

}  // namespace

RankIntervals CollectRankIntervals(const TraceStore& store, ProcessId p,
                                   const Keys& keys,
                                   const std::vector<RankStep>& steps,
                                   bool with_threads) {
  RankIntervals out;
  CollectiveTest is_collective(store, keys);
  NameFlags loader_names;
  auto& compute = out.of[static_cast<int>(StepCategory::kCompute)];
  auto& transfer = out.of[static_cast<int>(StepCategory::kCollectiveTransfer)];
  auto& wait = out.of[static_cast<int>(StepCategory::kCollectiveWait)];
  for (TrackId t : store.processes()[p].tracks) {
    const TrackInfo& info = store.tracks()[t];
    const SliceColumns& s = store.data(t).slices;
    if (IsDevice(info)) {
      for (uint32_t i = 0; i < s.size(); ++i) {
        const int64_t start = s.start(i), end = std::max(start, s.end(i));
        const EventRef e{t, trace_format::EventKind::kSlice, i};
        if (!is_collective(e, s.name(i))) {
          compute.push_back({start, end});
          continue;
        }
        int64_t w =
            NonNegative(IntArg(store.FindArgs(e), keys.wait_ns).value_or(0));
        w = std::min(w, base::SaturatingSub(end, start));
        wait.push_back({start, base::SaturatingAdd(start, w)});
        transfer.push_back({base::SaturatingAdd(start, w), end});
      }
    } else if (with_threads && IsThread(info)) {
      CollectThreadIntervals(store, t, steps, &loader_names, &out);
    }
  }
  return out;
}

absl::flat_hash_map<StringId, int64_t> ScopeTimes(const TraceStore& store,
                                                  ProcessId p, const Keys& keys,
                                                  int64_t t0, int64_t t1,
                                                  int64_t step_start,
                                                  int64_t step_end) {
  absl::flat_hash_map<StringId, int64_t> out;
  CollectiveTest is_collective(store, keys);
  for (TrackId t : store.processes()[p].tracks) {
    const TrackInfo& info = store.tracks()[t];
    const bool device = IsDevice(info);
    if (!device && !IsThread(info)) continue;
    const SliceColumns& s = store.data(t).slices;
    for (uint32_t d = 0; d < s.depth_count(); ++d) {
      const uint32_t lo =
          s.FirstStartingAtOrAfter(s.depth_begin(d), s.depth_end(d), t0);
      const uint32_t hi = s.FirstStartingAtOrAfter(lo, s.depth_end(d), t1);
      for (uint32_t i = lo; i < hi; ++i) {
        const int64_t start = s.start(i), end = std::max(start, s.end(i));
        if (device) {
          if (is_collective({t, trace_format::EventKind::kSlice, i},
                            s.name(i))) {
            continue;
          }
        } else if (start <= step_start && end >= step_end) {
          continue;  // the step itself or a slice around it
        }
        int64_t& v = out[s.name(i)];
        v = base::SaturatingAdd(v, base::SaturatingSub(end, start));
      }
    }
  }
  return out;
}

int RankOfProcess(ProcessId p) { return static_cast<int>(p); }

}  // namespace podscope::viewer::pod
