#include "track_layout.h"

#include <algorithm>

namespace podscope::viewer::app {

void TrackLayout::Reset(const TraceStore* store) {
  if (store != store_) {
    collapsed_hosts_.clear();
    collapsed_processes_.clear();
    // A big session opened as an overview shows a row per host; a host's
    // events are loaded when it is expanded.
    if (store != nullptr && store->is_overview()) {
      for (const HostInfo& h : store->hosts()) {
        if (!HostHasDetail(*store, h.id)) collapsed_hosts_.insert(h.id);
      }
    }
  }
  store_ = store;
  Relayout();
}

bool TrackLayout::HostHasDetail(const TraceStore& store, HostId host) {
  for (ProcessId p : store.hosts()[host].processes) {
    if (!store.processes()[p].detail) return false;
  }
  return true;
}

void TrackLayout::Relayout() {
  rows_.clear();
  row_of_track_.assign(store_ ? store_->tracks().size() : 0, -1);
  int y = 0;
  if (store_ == nullptr) {
    total_height_ = 0;
    return;
  }
  for (const HostInfo& host : store_->hosts()) {
    LayoutRow h;
    h.kind = RowKind::kHost;
    h.host = host.id;
    h.level = 0;
    h.y = y;
    h.height = kHostHeight;
    h.collapsed = host_collapsed(host.id);
    rows_.push_back(h);
    y += h.height;
    if (h.collapsed) continue;
    for (ProcessId pid : host.processes) {
      const ProcessInfo& process = store_->processes()[pid];
      LayoutRow p;
      p.kind = RowKind::kProcess;
      p.host = host.id;
      p.process = pid;
      p.level = 1;
      p.y = y;
      p.height = kProcessHeight;
      p.collapsed = process_collapsed(pid);
      rows_.push_back(p);
      y += p.height;
      if (p.collapsed) continue;
      for (TrackId tid : process.tracks) {
        const TrackData& d = store_->data(tid);
        if (d.event_count() == 0) continue;
        LayoutRow t;
        t.kind = RowKind::kTrack;
        t.host = host.id;
        t.process = pid;
        t.track = tid;
        t.level = 2;
        t.y = y;
        int h_in = kTrackPadding;
        if (d.instants.size() > 0) {
          t.instant_lane = h_in;
          h_in += kInstantLaneHeight;
        }
        if (!d.slices.empty()) {
          t.slice_top = h_in;
          t.depths = d.slices.depth_count();
          h_in += static_cast<int>(t.depths) * kLaneHeight;
        }
        if (d.samples.size() > 0) {
          t.sample_lane = h_in;
          h_in += kSampleLaneHeight;
        }
        if (d.counters.size() > 0) {
          t.counter_top = h_in;
          h_in += kCounterHeight;
        }
        t.height = std::max(h_in + kTrackPadding, kLaneHeight);
        row_of_track_[tid] = static_cast<int>(rows_.size());
        rows_.push_back(t);
        y += t.height;
      }
    }
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
  return row.y + row.slice_top + static_cast<int>(depth) * kLaneHeight +
         kLaneHeight / 2;
}

LaneHit TrackLayout::LaneAt(const LayoutRow& row, int y) const {
  LaneHit hit;
  if (row.kind != RowKind::kTrack) return hit;
  const int in = y - row.y;
  if (row.instant_lane >= 0 && in >= row.instant_lane &&
      in < row.instant_lane + kInstantLaneHeight) {
    hit.kind = LaneHit::kInstant;
  } else if (row.slice_top >= 0 && in >= row.slice_top &&
             in < row.slice_top + static_cast<int>(row.depths) * kLaneHeight) {
    hit.kind = LaneHit::kSlice;
    hit.depth = static_cast<uint32_t>((in - row.slice_top) / kLaneHeight);
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
    case RowKind::kTrack:
      return false;
  }
  return false;
}

void TrackLayout::SetAllCollapsed(bool collapsed) {
  collapsed_hosts_.clear();
  collapsed_processes_.clear();
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
  collapsed_processes_.erase(p);
  collapsed_hosts_.erase(store_->processes()[p].host);
  Relayout();
}

}  // namespace podscope::viewer::app
