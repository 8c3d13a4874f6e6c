// The vertical view-model of the timeline: one row per host, process and
// track (host -> process -> threads, device streams and counters), each
// header collapsible, and inside a track row the lanes its events are drawn
// in. Qt-free so it is tested without a window.
//
// What a multi-rank session shows first is every rank's work: a process's
// counter tracks sit under one summary row, collapsed when the session has
// more than one process. Tracks can be hidden one by one (or all but one),
// and "ranks side by side" shows only each rank's main thread and device
// streams, stacked by rank without host rows. Compact rows draw lanes
// shorter, and at most kCompactDepths levels of a track, so that many
// ranks fit one screen.
#ifndef PODSCOPE_VIEWER_APP_TRACK_LAYOUT_H_
#define PODSCOPE_VIEWER_APP_TRACK_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer::app {

// kCounters: the header of a process's counter tracks (level 2), which
// are listed under it when it is expanded.
enum class RowKind : uint8_t { kHost, kProcess, kTrack, kCounters };

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
  int lane_height = 18;  // of a slice lane (kCompactLaneHeight: compact)
  // Track rows: the levels the track has; more than `depths` when the
  // row shows only its first levels.
  uint32_t all_depths = 0;
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
  static constexpr int kCountersHeight = 18;
  // Compact rows: the heights that let 16 ranks' main threads and device
  // streams share one screen.
  // (No instant or sample lanes, no slice names.)
  static constexpr int kCompactLaneHeight = 5;
  static constexpr int kCompactDepths = 2;
  static constexpr int kCompactHeaderHeight = 12;
  static constexpr int kCompactPadding = 1;

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
  // Toggles a header row, or a track row that shows only its first levels
  // (all of them, and back); false for other track rows. Set-wide expansion
  // (SetAllCollapsed(false)) leaves overview hosts without detail
  // collapsed.
  bool ToggleRow(int row);
  void SetAllCollapsed(bool collapsed);
  // Expands the headers above a track so it is shown (and shows it when
  // it was hidden; leaves ranks side by side when that does not list it).
  void Reveal(TrackId track);

  // A process's counter summary row (collapsed: its counter tracks are not
  // listed).
  bool counters_collapsed(ProcessId p) const {
    return collapsed_counters_.contains(p);
  }
  void SetCountersCollapsed(ProcessId process, bool collapsed);

  // Hidden tracks have no row; a process (host) all of whose tracks are
  // hidden has none either.
  bool track_hidden(TrackId t) const { return hidden_tracks_.contains(t); }
  void SetTrackHidden(TrackId track, bool hidden);
  // Hides every track but `track`.
  void ShowOnly(TrackId track);
  // Shows every hidden track again.
  void ShowAllTracks();
  bool any_hidden() const { return !hidden_tracks_.empty(); }

  // Only each rank's main thread (MainThreadOf) and device streams, under
  // its process row, ranks in order of their index; no host rows.
  void SetRanksSideBySide(bool on);
  bool ranks_side_by_side() const { return side_by_side_; }
  void SetCompact(bool on);
  bool compact() const { return compact_; }

  // At most `levels` slice levels per track row (0: all), except for the
  // tracks toggled open (ToggleRow).
  void SetDepthLimit(uint32_t levels);
  uint32_t depth_limit() const { return depth_limit_; }
  // The first screen of a session of several ranks: the deepest levels
  // (down to one) that let every track's row fit `visible` pixels at full
  // height, where every name can be read; else the same with only every
  // rank's main thread and device streams (ranks side by side); else
  // compact rows, of every track, then side by side. When even those do
  // not fit, two levels per track at full height. Returns whether it all
  // fits.
  bool FitFirstScreen(int visible);

  // A process's main thread: the thread whose tid is the pid, else the
  // thread named "main" (or "MainThread"), else its first thread with
  // events; -1 when it has no thread.
  static int64_t MainThreadOf(const TraceStore& store, ProcessId process);

  // Every process of the host has its events loaded (a store opened as an
  // overview loads them per host; see TraceStore::LoadDetail).
  static bool HostHasDetail(const TraceStore& store, HostId host);

 private:
  void Relayout();
  // Whether a track with events gets a row (not hidden, and in the
  // side-by-side set when that is on).
  bool TrackShown(TrackId t) const;
  // Whether a process gets a row: it has a shown track, or none of its
  // tracks has events (an overview's process).
  bool ProcessShown(ProcessId p) const;
  void AddProcess(ProcessId pid, int level, int* y);
  void AddTrack(TrackId tid, int* y);

  const TraceStore* store_ = nullptr;
  std::vector<LayoutRow> rows_;
  std::vector<int> row_of_track_;
  int total_height_ = 0;
  absl::flat_hash_set<HostId> collapsed_hosts_;
  absl::flat_hash_set<ProcessId> collapsed_processes_;
  absl::flat_hash_set<ProcessId> collapsed_counters_;
  absl::flat_hash_set<TrackId> hidden_tracks_;
  absl::flat_hash_set<TrackId> all_levels_;  // rows toggled to every level
  uint32_t depth_limit_ = 0;
  bool side_by_side_ = false;
  bool compact_ = false;
  std::vector<int64_t> main_thread_;  // by process, for side by side
};

}  // namespace podscope::viewer::app

#endif  // PODSCOPE_VIEWER_APP_TRACK_LAYOUT_H_
