// The vertical view-model of the timeline: one row per host, process and
// track (host -> process -> threads, device streams and counters), each
// header collapsible, and inside a track row the lanes its events are drawn
// in. Qt-free so it is tested without a window.
#ifndef PODSCOPE_VIEWER_APP_TRACK_LAYOUT_H_
#define PODSCOPE_VIEWER_APP_TRACK_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

enum class RowKind : uint8_t { kHost, kProcess, kTrack };

struct LayoutRow {
  RowKind kind = RowKind::kTrack;
  HostId host = 0;
  ProcessId process = 0;
  TrackId track = 0;  // kTrack only
  int level = 0;      // 0 host, 1 process, 2 track
  int y = 0;          // content coordinates
  int height = 0;
  bool collapsed = false;  // headers only
  // Track rows: lane offsets from y, -1 when the track has none of that.
  int instant_lane = -1;
  int slice_top = -1;
  uint32_t depths = 0;
  int sample_lane = -1;
  int counter_top = -1;
};

// What lane a point of a track row is in.
struct LaneHit {
  enum Kind : uint8_t { kNone, kInstant, kSlice, kSample, kCounter };
  Kind kind = kNone;
  uint32_t depth = 0;  // kSlice
};

class TrackLayout {
 public:
  static constexpr int kHostHeight = 24;
  static constexpr int kProcessHeight = 20;
  static constexpr int kLaneHeight = 18;
  static constexpr int kInstantLaneHeight = 12;
  static constexpr int kSampleLaneHeight = 10;
  static constexpr int kCounterHeight = 40;
  static constexpr int kTrackPadding = 3;  // above and below a track's lanes

  // Rebuilds the rows of `store` (null: none). Collapsed state is kept
  // only while the store stays the same.
  void Reset(const TraceStore* store);

  const std::vector<LayoutRow>& rows() const { return rows_; }
  int total_height() const { return total_height_; }

  // The row at content y, or -1.
  int RowAt(int y) const;
  // The row of a track, or -1 when it is hidden (empty, or under a
  // collapsed header).
  int RowOfTrack(TrackId track) const;
  // The content y of the centre of a slice lane of a visible track, or -1.
  int LaneCenter(TrackId track, uint32_t depth) const;
  LaneHit LaneAt(const LayoutRow& row, int y) const;

  bool host_collapsed(HostId h) const { return collapsed_hosts_.contains(h); }
  bool process_collapsed(ProcessId p) const {
    return collapsed_processes_.contains(p);
  }
  void SetHostCollapsed(HostId host, bool collapsed);
  void SetProcessCollapsed(ProcessId process, bool collapsed);
  // Toggles a header row; false for a track row. Set-wide expansion
  // (SetAllCollapsed(false)) leaves overview hosts without detail
  // collapsed.
  bool ToggleRow(int row);
  void SetAllCollapsed(bool collapsed);
  // Expands the headers above a track so it is shown.
  void Reveal(TrackId track);

  // Every process of the host has its events loaded (a store opened as an
  // overview loads them per host; see TraceStore::LoadDetail).
  static bool HostHasDetail(const TraceStore& store, HostId host);

 private:
  void Relayout();

  const TraceStore* store_ = nullptr;
  std::vector<LayoutRow> rows_;
  std::vector<int> row_of_track_;
  int total_height_ = 0;
  absl::flat_hash_set<HostId> collapsed_hosts_;
  absl::flat_hash_set<ProcessId> collapsed_processes_;
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TRACK_LAYOUT_H_
