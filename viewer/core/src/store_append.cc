#include "store_append.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#include "podscope/trace_format/chunk_codec.h"

namespace podscope::viewer {
namespace tf = trace_format;

namespace {

// Where the old and the new events of one column went in the merged column.
struct Placement {
  std::vector<uint32_t> old_to_new;
  std::vector<uint32_t> fresh_to_new;
  bool identity_old = true;  // old_to_new[i] == i (then left empty)
};

// Merges a track's slices with `fresh` (reader order).
Placement MergeSlices(SliceColumns* columns, std::vector<tf::Slice> fresh) {
  Placement place;
  const SliceColumns& old = *columns;
  const uint32_t n_old = old.size();
  if (fresh.empty()) return place;
  int64_t old_end = std::numeric_limits<int64_t>::min();
  for (uint32_t d = 0; d < old.depth_count(); ++d) {
    if (old.depth_begin(d) != old.depth_end(d)) {
      old_end = std::max(old_end, old.covered_end(old.depth_end(d) - 1));
    }
  }
  std::vector<uint32_t> where;
  if (!old.relaid() && fresh.front().start_ns >= old_end) {
    // Everything new starts after everything old ends: nothing old encloses
    // a new slice or the other way round, so the new slices' depths are
    // their own and each depth's new run goes after its old one.
    tf::ComputeSliceDepths(&fresh);
    *columns = SliceColumns::AppendAfter(old, fresh, &where);
    place.identity_old = false;
    place.old_to_new.assign(where.begin(), where.begin() + n_old);
    place.fresh_to_new.assign(where.begin() + n_old, where.end());
    return place;
  }
  // A new slice reaches back over old ones (a parent written after its
  // children): merge in reader order and nest again.
  std::vector<std::pair<tf::Slice, uint32_t>> tagged;
  tagged.reserve(n_old + fresh.size());
  for (uint32_t i = 0; i < n_old; ++i) tagged.push_back({old.Get(i), i});
  auto by_reader = [](const auto& a, const auto& b) {
    return tf::SliceOrder(a.first, b.first);
  };
  std::stable_sort(tagged.begin(), tagged.end(), by_reader);
  const size_t mid = tagged.size();
  for (uint32_t j = 0; j < fresh.size(); ++j) {
    tagged.push_back({fresh[j], n_old + j});
  }
  std::inplace_merge(tagged.begin(), tagged.begin() + mid, tagged.end(),
                     by_reader);
  std::vector<tf::Slice> input;
  input.reserve(tagged.size());
  for (const auto& [s, tag] : tagged) input.push_back(s);
  tf::ComputeSliceDepths(&input);
  *columns = SliceColumns::Build(std::move(input), &where);
  place.identity_old = false;
  place.old_to_new.resize(n_old);
  place.fresh_to_new.resize(fresh.size());
  for (size_t k = 0; k < tagged.size(); ++k) {
    const uint32_t tag = tagged[k].second;
    if (tag < n_old) {
      place.old_to_new[tag] = where[k];
    } else {
      place.fresh_to_new[tag - n_old] = where[k];
    }
  }
  return place;
}

// Appends `fresh` (by time) to parallel columns ts/values kept by time;
// returns where old and new went when the new ones reach back.
template <typename V>
Placement MergeByTime(std::vector<int64_t>* ts, std::vector<V>* values,
                      std::vector<int64_t> fresh_ts, std::vector<V> fresh_v) {
  Placement place;
  const size_t n_old = ts->size();
  if (fresh_ts.empty()) return place;
  if (n_old == 0 || fresh_ts.front() >= ts->back()) {
    place.fresh_to_new.resize(fresh_ts.size());
    std::iota(place.fresh_to_new.begin(), place.fresh_to_new.end(),
              static_cast<uint32_t>(n_old));
    ts->insert(ts->end(), fresh_ts.begin(), fresh_ts.end());
    values->insert(values->end(), fresh_v.begin(), fresh_v.end());
    return place;
  }
  const size_t n = n_old + fresh_ts.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  auto t_of = [&](uint32_t k) {
    return k < n_old ? (*ts)[k] : fresh_ts[k - n_old];
  };
  std::inplace_merge(order.begin(), order.begin() + n_old, order.end(),
                     [&](uint32_t a, uint32_t b) { return t_of(a) < t_of(b); });
  std::vector<int64_t> out_ts(n);
  std::vector<V> out_v(n);
  place.identity_old = false;
  place.old_to_new.resize(n_old);
  place.fresh_to_new.resize(fresh_ts.size());
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t from = order[k];
    if (from < n_old) {
      out_ts[k] = (*ts)[from];
      out_v[k] = (*values)[from];
      place.old_to_new[from] = k;
    } else {
      out_ts[k] = fresh_ts[from - n_old];
      out_v[k] = fresh_v[from - n_old];
      place.fresh_to_new[from - n_old] = k;
    }
  }
  *ts = std::move(out_ts);
  *values = std::move(out_v);
  return place;
}

// Moves old entries' indices and adds the new entries (indices of the new
// events) to a (kind, index)-sorted side table.
template <typename T>
void MergeSide(std::vector<T>* side, std::vector<T> fresh,
               const Placement& slices, const Placement& instants) {
  auto place = [](const Placement& p, uint32_t i, bool old) {
    if (old) return p.identity_old ? i : p.old_to_new[i];
    return p.fresh_to_new[i];
  };
  if (!fresh.empty() || !slices.identity_old || !instants.identity_old) {
    for (T& e : *side) {
      e.index = place(e.kind == tf::EventKind::kSlice ? slices : instants,
                      e.index, true);
    }
  }
  for (T& e : fresh) {
    const Placement& p = e.kind == tf::EventKind::kSlice ? slices : instants;
    if (e.index >= p.fresh_to_new.size()) continue;  // names no event
    e.index = place(p, e.index, false);
    side->push_back(std::move(e));
  }
  std::stable_sort(side->begin(), side->end(), [](const T& a, const T& b) {
    return std::make_pair(a.kind, a.index) < std::make_pair(b.kind, b.index);
  });
}

}  // namespace

TraceStore* StoreAppender::NewStore(const std::string& path) {
  auto* store = new TraceStore();
  Intern(store, "");
  SessionInfo s;
  s.path = path;
  s.name = path;
  if (auto slash = path.find_last_of('/');
      slash != std::string::npos && slash + 1 < path.size()) {
    s.name = path.substr(slash + 1);
  }
  SetSession(store, std::move(s));
  return store;
}

StringId StoreAppender::Intern(TraceStore* store, std::string_view s) {
  auto [it, added] = store->string_ids_.try_emplace(
      std::string(s), static_cast<StringId>(store->strings_.size()));
  if (added) store->strings_.emplace_back(s);
  return it->second;
}

ProcessId StoreAppender::AddProcess(TraceStore* store, ProcessInfo info) {
  const ProcessId id = static_cast<ProcessId>(store->processes_.size());
  info.id = id;
  auto host =
      std::find_if(store->hosts_.begin(), store->hosts_.end(),
                   [&](const HostInfo& h) { return h.name == info.host_name; });
  if (host == store->hosts_.end()) {
    store->hosts_.push_back(
        {static_cast<HostId>(store->hosts_.size()), info.host_name, {}});
    host = store->hosts_.end() - 1;
  }
  info.host = host->id;
  auto key = [](const ProcessInfo& p) {
    return std::make_tuple(p.process_index, p.pid, p.path);
  };
  auto at = std::upper_bound(host->processes.begin(), host->processes.end(),
                             key(info), [&](const auto& k, ProcessId p) {
                               return k < key(store->processes_[p]);
                             });
  host->processes.insert(at, id);
  store->processes_.push_back(std::move(info));
  return id;
}

TrackId StoreAppender::AddTrack(TraceStore* store, TrackInfo info) {
  const TrackId id = static_cast<TrackId>(store->tracks_.size());
  info.id = id;
  store->tracks_.push_back(std::move(info));
  store->data_.push_back(std::make_unique<TrackData>());
  Resort(store, id);
  return id;
}

void StoreAppender::Resort(TraceStore* store, TrackId id) {
  std::vector<TrackId>& list =
      store->processes_[store->tracks_[id].process].tracks;
  std::erase(list, id);
  const int32_t sort = store->tracks_[id].sort_index;
  auto at = std::upper_bound(
      list.begin(), list.end(), sort,
      [&](int32_t s, TrackId t) { return s < store->tracks_[t].sort_index; });
  list.insert(at, id);
}

uint64_t StoreAppender::Append(TraceStore* store, TrackId id,
                               tf::TrackEvents events) {
  TrackData& d = *store->data_[id];
  const uint64_t added = events.event_count();
  if (added == 0 && events.args.empty() && events.flows.empty()) return 0;
  const Placement slices = MergeSlices(&d.slices, std::move(events.slices));

  std::vector<int64_t> ts;
  std::vector<uint32_t> names;
  for (const tf::Instant& e : events.instants) {
    ts.push_back(e.ts_ns);
    names.push_back(e.name);
  }
  const Placement instants = MergeByTime(&d.instants.ts, &d.instants.names,
                                         std::move(ts), std::move(names));
  if (!events.counters.empty()) {
    std::vector<int64_t> cts;
    std::vector<double> values;
    for (const tf::CounterSample& e : events.counters) {
      cts.push_back(e.ts_ns);
      values.push_back(e.value);
    }
    MergeByTime(&d.counters.ts, &d.counters.values, std::move(cts),
                std::move(values));
    d.counters.BuildIndexes();
  }
  if (!events.samples.empty()) {
    std::vector<int64_t> sts;
    std::vector<uint32_t> stacks;
    for (const tf::StackSample& e : events.samples) {
      sts.push_back(e.ts_ns);
      stacks.push_back(e.stack);
    }
    MergeByTime(&d.samples.ts, &d.samples.stacks, std::move(sts),
                std::move(stacks));
  }
  MergeSide(&d.args, std::move(events.args), slices, instants);
  MergeSide(&d.flows, std::move(events.flows), slices, instants);
  return added;
}

void StoreAppender::Clear(TraceStore* store, TrackId id) {
  *store->data_[id] = TrackData();
}

void StoreAppender::Finish(TraceStore* store) {
  store->flows_.clear();
  store->event_count_ = 0;
  bool any = false;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  auto add = [&](int64_t lo, int64_t hi) {
    any = true;
    first = std::min(first, lo);
    last = std::max(last, hi);
  };
  // A process not loaded yet keeps its file's count, and its overview's
  // time counts.
  for (ProcessInfo& p : store->processes_) {
    if (p.detail) {
      p.events = 0;
    } else if (p.overview != nullptr && !p.overview->busy.empty()) {
      add(p.overview->first_ns, p.overview->last_ns());
    }
  }
  for (TrackId t = 0; t < store->tracks_.size(); ++t) {
    const TrackData& d = *store->data_[t];
    store->event_count_ += d.event_count();
    store->processes_[store->tracks_[t].process].events += d.event_count();
    for (const tf::FlowLink& f : d.flows) {
      store->flows_[f.flow_id].push_back({{t, f.kind, f.index}, f.phase});
    }
    const SliceColumns& s = d.slices;
    for (uint32_t depth = 0; depth < s.depth_count(); ++depth) {
      if (s.depth_begin(depth) == s.depth_end(depth)) continue;
      add(s.start(s.depth_begin(depth)), s.end(s.depth_end(depth) - 1));
    }
    for (const auto* ts : {&d.instants.ts, &d.counters.ts, &d.samples.ts}) {
      if (!ts->empty()) add(ts->front(), ts->back());
    }
  }
  store->first_ns_ = any ? first : 0;
  store->last_ns_ = any ? last : 0;
}

}  // namespace podscope::viewer
