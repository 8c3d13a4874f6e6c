#include "track_layout.h"

#include <algorithm>
#include <climits>

namespace podscope::viewer::app {

void TrackLayout::Reset(const TraceStore* store) {
  if (store != store_) {
    collapsed_hosts_.clear();
    collapsed_processes_.clear();
    collapsed_counters_.clear();
    hidden_tracks_.clear();
    all_levels_.clear();
    depth_limit_ = 0;
    // A big session opened as an overview shows a row per host; a host's
    // events are loaded when it is expanded.
    if (store != nullptr && store->is_overview()) {
      for (const HostInfo& h : store->hosts()) {
        if (!HostHasDetail(*store, h.id)) collapsed_hosts_.insert(h.id);
      }
    }
    // Several ranks: their work first, each one's counters in one row.
    if (store != nullptr && store->processes().size() > 1) {
      for (const ProcessInfo& p : store->processes()) {
        collapsed_counters_.insert(p.id);
      }
    }
  }
  store_ = store;
  main_thread_.clear();
  if (store_ != nullptr) {
    for (const ProcessInfo& p : store_->processes()) {
      main_thread_.push_back(MainThreadOf(*store_, p.id));
    }
  }
  Relayout();
}

bool TrackLayout::HostHasDetail(const TraceStore& store, HostId host) {
  for (ProcessId p : store.hosts()[host].processes) {
    if (!store.processes()[p].detail) return false;
  }
  return true;
}

int64_t TrackLayout::MainThreadOf(const TraceStore& store, ProcessId process) {
  const ProcessInfo& proc = store.processes()[process];
  int64_t named = -1, first = -1;
  for (TrackId t : proc.tracks) {
    const TrackInfo& info = store.tracks()[t];
    if (info.kind != trace_format::proto::TRACK_KIND_THREAD) continue;
    if (info.tid == proc.pid && proc.pid != 0) return t;
    if (named < 0 && (info.name == "main" || info.name == "MainThread")) {
      named = t;
    }
    if (first < 0 && store.data(t).event_count() > 0) first = t;
  }
  return named >= 0 ? named : first;
}

bool TrackLayout::TrackShown(TrackId t) const {
  if (store_->data(t).event_count() == 0 || hidden_tracks_.contains(t)) {
    return false;
  }
  if (!side_by_side_) return true;
  const TrackInfo& info = store_->tracks()[t];
  return info.kind == trace_format::proto::TRACK_KIND_DEVICE_STREAM ||
         (info.process < main_thread_.size() &&
          main_thread_[info.process] == static_cast<int64_t>(t));
}

bool TrackLayout::ProcessShown(ProcessId p) const {
  bool any_events = false;
  for (TrackId t : store_->processes()[p].tracks) {
    if (TrackShown(t)) return true;
    any_events = any_events || store_->data(t).event_count() > 0;
  }
  return !any_events;
}

void TrackLayout::AddTrack(TrackId tid, int* y) {
  const TrackData& d = store_->data(tid);
  const TrackInfo& info = store_->tracks()[tid];
  LayoutRow t;
  t.kind = RowKind::kTrack;
  t.host = store_->processes()[info.process].host;
  t.process = info.process;
  t.track = tid;
  t.level = 2;
  t.y = *y;
  t.lane_height = compact_ ? kCompactLaneHeight : kLaneHeight;
  const int padding = compact_ ? kCompactPadding : kTrackPadding;
  int h_in = padding;
  if (d.instants.size() > 0 && !compact_) {
    t.instant_lane = h_in;
    h_in += kInstantLaneHeight;
  }
  if (!d.slices.empty()) {
    t.slice_top = h_in;
    t.all_depths = t.depths = d.slices.depth_count();
    uint32_t limit = compact_ ? kCompactDepths : depth_limit_;
    if (compact_ && depth_limit_ > 0) limit = std::min(limit, depth_limit_);
    if (limit > 0 && !all_levels_.contains(tid)) {
      t.depths = std::min(t.depths, limit);
    }
    h_in += static_cast<int>(t.depths) * t.lane_height;
  }
  if (d.samples.size() > 0 && !compact_) {
    t.sample_lane = h_in;
    h_in += kSampleLaneHeight;
  }
  if (d.counters.size() > 0) {
    t.counter_top = h_in;
    h_in += kCounterHeight;
  }
  t.height = std::max(h_in + padding, t.lane_height);
  row_of_track_[tid] = static_cast<int>(rows_.size());
  rows_.push_back(t);
  *y += t.height;
}

void TrackLayout::AddProcess(ProcessId pid, int level, int* y) {
  const ProcessInfo& process = store_->processes()[pid];
  LayoutRow p;
  p.kind = RowKind::kProcess;
  p.host = process.host;
  p.process = pid;
  p.level = level;
  p.y = *y;
  p.height = compact_ ? kCompactHeaderHeight : kProcessHeight;
  p.collapsed = process_collapsed(pid);
  rows_.push_back(p);
  *y += p.height;
  if (p.collapsed) return;
  std::vector<TrackId> counters;
  for (TrackId tid : process.tracks) {
    if (!TrackShown(tid)) continue;
    if (store_->tracks()[tid].kind == trace_format::proto::TRACK_KIND_COUNTER) {
      counters.push_back(tid);
      continue;
    }
    AddTrack(tid, y);
  }
  if (counters.empty()) return;
  // The counters last, under their summary row.
  LayoutRow c;
  c.kind = RowKind::kCounters;
  c.host = process.host;
  c.process = pid;
  c.track = counters.front();
  c.level = 2;
  c.y = *y;
  c.height = compact_ ? kCompactHeaderHeight : kCountersHeight;
  c.collapsed = counters_collapsed(pid);
  c.depths = static_cast<uint32_t>(counters.size());
  rows_.push_back(c);
  *y += c.height;
  if (c.collapsed) return;
  for (TrackId tid : counters) AddTrack(tid, y);
}

void TrackLayout::Relayout() {
  rows_.clear();
  row_of_track_.assign(store_ ? store_->tracks().size() : 0, -1);
  int y = 0;
  if (store_ == nullptr) {
    total_height_ = 0;
    return;
  }
  if (side_by_side_) {
    // Rank order: the file's process index, then load order.
    std::vector<ProcessId> order;
    for (const ProcessInfo& p : store_->processes()) {
      if (ProcessShown(p.id)) order.push_back(p.id);
    }
    std::stable_sort(order.begin(), order.end(),
                     [this](ProcessId a, ProcessId b) {
                       const ProcessInfo& pa = store_->processes()[a];
                       const ProcessInfo& pb = store_->processes()[b];
                       const int32_t ia =
                           pa.process_index < 0 ? INT32_MAX : pa.process_index;
                       const int32_t ib =
                           pb.process_index < 0 ? INT32_MAX : pb.process_index;
                       return ia < ib;
                     });
    for (ProcessId pid : order) AddProcess(pid, 0, &y);
    total_height_ = y;
    return;
  }
  for (const HostInfo& host : store_->hosts()) {
    std::vector<ProcessId> shown;
    for (ProcessId pid : host.processes) {
      if (ProcessShown(pid)) shown.push_back(pid);
    }
    if (shown.empty() && !host.processes.empty()) continue;
    LayoutRow h;
    h.kind = RowKind::kHost;
    h.host = host.id;
    h.level = 0;
    h.y = y;
    h.height = compact_ ? kCompactHeaderHeight : kHostHeight;
    h.collapsed = host_collapsed(host.id);
    rows_.push_back(h);
    y += h.height;
    if (h.collapsed) continue;
    for (ProcessId pid : shown) AddProcess(pid, 1, &y);
  }
  total_height_ = y;
}

int TrackLayout::RowAt(int y) const {
  if (rows_.empty() || y < 0 || y >= total_height_) return -1;
  auto it = std::upper_bound(
      rows_.begin(), rows_.end(), y,
      [](int value, const LayoutRow& r) { return value < r.y; });
  return static_cast<int>(it - rows_.begin()) - 1;
}

int TrackLayout::RowOfTrack(TrackId track) const {
  return track < row_of_track_.size() ? row_of_track_[track] : -1;
}

int TrackLayout::LaneCenter(TrackId track, uint32_t depth) const {
  const int r = RowOfTrack(track);
  if (r < 0) return -1;
  const LayoutRow& row = rows_[r];
  if (row.slice_top < 0) {
    if (row.instant_lane >= 0) {
      return row.y + row.instant_lane + kInstantLaneHeight / 2;
    }
    return row.y + row.height / 2;
  }
  // Levels deeper than a compact row shows are drawn at its last lane.
  const int d =
      std::min<int>(static_cast<int>(depth),
                    std::max<int>(1, static_cast<int>(row.depths)) - 1);
  return row.y + row.slice_top + d * row.lane_height + row.lane_height / 2;
}

LaneHit TrackLayout::LaneAt(const LayoutRow& row, int y) const {
  LaneHit hit;
  if (row.kind != RowKind::kTrack) return hit;
  const int in = y - row.y;
  if (row.instant_lane >= 0 && in >= row.instant_lane &&
      in < row.instant_lane + kInstantLaneHeight) {
    hit.kind = LaneHit::kInstant;
  } else if (row.slice_top >= 0 && in >= row.slice_top &&
             in < row.slice_top +
                      static_cast<int>(row.depths) * row.lane_height) {
    hit.kind = LaneHit::kSlice;
    hit.depth = static_cast<uint32_t>((in - row.slice_top) / row.lane_height);
  } else if (row.sample_lane >= 0 && in >= row.sample_lane &&
             in < row.sample_lane + kSampleLaneHeight) {
    hit.kind = LaneHit::kSample;
  } else if (row.counter_top >= 0 && in >= row.counter_top &&
             in < row.counter_top + kCounterHeight) {
    hit.kind = LaneHit::kCounter;
  }
  return hit;
}

void TrackLayout::SetHostCollapsed(HostId host, bool collapsed) {
  if (collapsed) {
    collapsed_hosts_.insert(host);
  } else {
    collapsed_hosts_.erase(host);
  }
  Relayout();
}

void TrackLayout::SetProcessCollapsed(ProcessId process, bool collapsed) {
  if (collapsed) {
    collapsed_processes_.insert(process);
  } else {
    collapsed_processes_.erase(process);
  }
  Relayout();
}

bool TrackLayout::ToggleRow(int row) {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return false;
  const LayoutRow r = rows_[row];
  switch (r.kind) {
    case RowKind::kHost:
      SetHostCollapsed(r.host, !r.collapsed);
      return true;
    case RowKind::kProcess:
      SetProcessCollapsed(r.process, !r.collapsed);
      return true;
    case RowKind::kCounters:
      SetCountersCollapsed(r.process, !r.collapsed);
      return true;
    case RowKind::kTrack:
      if (r.depths < r.all_depths) {
        all_levels_.insert(r.track);
      } else if (all_levels_.contains(r.track)) {
        all_levels_.erase(r.track);
      } else {
        return false;
      }
      Relayout();
      return true;
  }
  return false;
}

void TrackLayout::SetDepthLimit(uint32_t levels) {
  depth_limit_ = levels;
  Relayout();
}

bool TrackLayout::FitFirstScreen(int visible) {
  if (store_ == nullptr || store_->processes().size() < 2) return true;
  const auto fits_at_full_height = [&] {
    compact_ = false;
    for (uint32_t limit : {0u, 8u, 6u, 4u, 3u, 2u, 1u}) {
      depth_limit_ = limit;
      Relayout();
      if (total_height_ <= visible) return true;
    }
    return false;
  };
  const auto fits_compact = [&] {
    compact_ = true;
    depth_limit_ = 0;
    Relayout();
    return total_height_ <= visible;
  };
  // Every track, then every rank's main thread and device streams, at full
  // height, where every name can be read; then compact rows.
  side_by_side_ = false;
  if (fits_at_full_height()) return true;
  side_by_side_ = true;
  if (fits_at_full_height()) return true;
  side_by_side_ = false;
  if (fits_compact()) return true;
  side_by_side_ = true;
  if (fits_compact()) return true;
  // Nothing fits (too many ranks, or an overview's hosts): rows that keep
  // their names, with the fewest levels.
  side_by_side_ = false;
  compact_ = false;
  depth_limit_ = 2;
  Relayout();
  return false;
}

void TrackLayout::SetCountersCollapsed(ProcessId process, bool collapsed) {
  if (collapsed) {
    collapsed_counters_.insert(process);
  } else {
    collapsed_counters_.erase(process);
  }
  Relayout();
}

void TrackLayout::SetTrackHidden(TrackId track, bool hidden) {
  if (hidden) {
    hidden_tracks_.insert(track);
  } else {
    hidden_tracks_.erase(track);
  }
  Relayout();
}

void TrackLayout::ShowOnly(TrackId track) {
  if (store_ == nullptr || track >= store_->tracks().size()) return;
  hidden_tracks_.clear();
  for (TrackId t = 0; t < store_->tracks().size(); ++t) {
    if (t != track) hidden_tracks_.insert(t);
  }
  Reveal(track);
}

void TrackLayout::ShowAllTracks() {
  hidden_tracks_.clear();
  Relayout();
}

void TrackLayout::SetRanksSideBySide(bool on) {
  side_by_side_ = on;
  Relayout();
}

void TrackLayout::SetCompact(bool on) {
  compact_ = on;
  Relayout();
}

void TrackLayout::SetAllCollapsed(bool collapsed) {
  collapsed_hosts_.clear();
  collapsed_processes_.clear();
  if (!collapsed) collapsed_counters_.clear();
  if (store_ != nullptr) {
    for (const HostInfo& h : store_->hosts()) {
      // Expanding everything does not load every host of an overview.
      if (collapsed || !HostHasDetail(*store_, h.id)) {
        collapsed_hosts_.insert(h.id);
      }
    }
  }
  Relayout();
}

void TrackLayout::Reveal(TrackId track) {
  if (store_ == nullptr || track >= store_->tracks().size()) return;
  const ProcessId p = store_->tracks()[track].process;
  hidden_tracks_.erase(track);
  if (store_->tracks()[track].kind == trace_format::proto::TRACK_KIND_COUNTER) {
    collapsed_counters_.erase(p);
  }
  collapsed_processes_.erase(p);
  collapsed_hosts_.erase(store_->processes()[p].host);
  // A track side by side does not list is shown with every other.
  if (side_by_side_ && store_->data(track).event_count() > 0 &&
      !TrackShown(track)) {
    side_by_side_ = false;
  }
  Relayout();
}

}  // namespace podscope::viewer::app
