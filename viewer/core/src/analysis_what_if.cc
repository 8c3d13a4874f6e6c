// What-if re-timing of a step (critical_path.h): the step's units on every
// rank, their dependencies, and a forward pass in the order they started.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis_pod_util.h"
#include "critical_path_units.h"
#include "podscope/base/numeric.h"
#include "podscope/base/strings.h"
#include "podscope/viewer/critical_path.h"

namespace podscope::viewer {
namespace {

using cp::TrackUnits;
using cp::Unit;

absl::Status Bad(std::string_view spec, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--what_if '", std::string(spec), "': ", std::string(why),
      " (expected op:NAME=-20%, collectives=0 or loader:RANK=median)"));
}

// One unit in the re-timing.
struct Node {
  size_t track = 0;            // index into the tracks
  size_t index = 0;            // in its track's units
  int64_t start = 0, end = 0;  // as recorded (clipped to the window)
  int64_t duration = 0;        // after the change
  int64_t latency = 0;         // start beyond its dependencies, as recorded
  int prev = -1;               // the unit before it on its track
  // The host unit holding its launch, and the launch's end within it.
  int launch_host = -1;
  int64_t launch_offset = 0;
  int collective = -1;  // index into the joined collectives
  int64_t new_start = 0;
};

}  // namespace

absl::StatusOr<WhatIf> ParseWhatIf(std::string_view spec) {
  WhatIf w;
  w.text = std::string(spec);
  if (spec == "collectives=0" || spec == "collective_wait=0") {
    w.kind = WhatIf::Kind::kNoCollectiveWait;
    return w;
  }
  const size_t eq = spec.rfind('=');
  if (eq == std::string_view::npos) return Bad(spec, "no '='");
  const std::string_view left = spec.substr(0, eq), right = spec.substr(eq + 1);
  if (left.starts_with("loader:")) {
    if (right != "median") return Bad(spec, "loader:RANK takes =median");
    int rank = -1;
    const std::string_view r = left.substr(7);
    auto [ptr, ec] = std::from_chars(r.data(), r.data() + r.size(), rank);
    if (r.empty() || ec != std::errc() || ptr != r.data() + r.size() ||
        rank < 0) {
      return Bad(spec, "loader:RANK needs a rank number");
    }
    w.kind = WhatIf::Kind::kLoaderMedian;
    w.rank = rank;
    return w;
  }
  if (!left.starts_with("op:") || left.size() <= 3) {
    return Bad(spec, "unknown change");
  }
  std::string_view pct = right;
  if (!pct.ends_with('%')) return Bad(spec, "op:NAME takes a change in %");
  pct.remove_suffix(1);
  if (pct.starts_with('+')) pct.remove_prefix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(pct.data(), pct.data() + pct.size(), v);
  if (pct.empty() || ec != std::errc() || ptr != pct.data() + pct.size() ||
      !std::isfinite(v) || v <= -100 || v > 1000) {
    return Bad(spec, "the change must be a number of % above -100");
  }
  w.kind = WhatIf::Kind::kOp;
  w.name = std::string(left.substr(3));
  w.factor = 1 + v / 100;
  return w;
}

WhatIfResult SimulateWhatIf(const TraceStore& store, const StepBreakdown& steps,
                            const StragglerReport& stragglers, int row,
                            const WhatIf& change) {
  WhatIfResult out;
  if (row < 0 || static_cast<size_t>(row) >= steps.rows.size()) return out;
  // Named, not a structured binding: the lambdas below use it.
  const auto window = cp::StepWindow(steps, row);
  const int64_t w0 = window.first, w1 = window.second;
  if (w1 <= w0) return out;
  out.step_ns = w1 - w0;
  const std::vector<TrackUnits> tracks =
      cp::CollectStepTracks(store, steps, row, w0, w1);
  std::vector<Node> nodes;
  absl::flat_hash_map<uint64_t, int> node_of;
  absl::flat_hash_map<TrackId, size_t> track_of;
  for (size_t t = 0; t < tracks.size(); ++t) {
    track_of[tracks[t].track] = t;
    for (size_t i = 0; i < tracks[t].units.size(); ++i) {
      const Unit& u = tracks[t].units[i];
      Node n;
      n.track = t;
      n.index = i;
      n.start = u.start;
      n.end = u.end;
      n.duration = u.end - u.start;
      n.prev = i > 0 ? static_cast<int>(nodes.size()) - 1 : -1;
      node_of[pod::SliceKey(u.event)] = static_cast<int>(nodes.size());
      nodes.push_back(n);
    }
  }
  // The unit of a track covering time `at`, -1 when none.
  auto unit_at = [&](TrackId track, int64_t at) -> int {
    auto it = track_of.find(track);
    if (it == track_of.end()) return -1;
    const std::vector<Unit>& units = tracks[it->second].units;
    auto u =
        std::upper_bound(units.begin(), units.end(), at,
                         [](int64_t v, const Unit& x) { return v < x.start; });
    if (u == units.begin()) return -1;
    --u;
    if (u->end < at) return -1;
    return node_of[pod::SliceKey(u->event)];
  };
  // Collectives: each joined one's units, and its transfer time after the
  // last arrival.
  std::vector<std::vector<int>> members(stragglers.collectives.size());
  std::vector<int64_t> transfer(stragglers.collectives.size(), 0);
  for (size_t k = 0; k < stragglers.collectives.size(); ++k) {
    const JoinedCollective& c = stragglers.collectives[k];
    int64_t last = std::numeric_limits<int64_t>::min();
    for (const CollectiveArrival& a : c.arrivals) {
      auto it = node_of.find(pod::SliceKey(a.event));
      if (it == node_of.end()) continue;
      members[k].push_back(it->second);
      last = std::max(last, nodes[it->second].start);
    }
    if (members[k].size() < 2) {
      members[k].clear();
      continue;
    }
    for (int m : members[k]) {
      nodes[m].collective = static_cast<int>(k);
      transfer[k] = std::max(transfer[k], nodes[m].end - last);
    }
  }
  // Launches, and each unit's latency beyond its recorded dependencies.
  for (Node& n : nodes) {
    const TrackUnits& t = tracks[n.track];
    int64_t ready = n.prev >= 0 ? nodes[n.prev].end : w0;
    if (t.device) {
      for (const TraceStore::FlowEnd& f : store.Flows(t.units[n.index].event)) {
        if (f.event.kind != trace_format::EventKind::kSlice) continue;
        const int64_t launched =
            store.StartOf(f.event) + store.DurationOf(f.event);
        const int host = unit_at(f.event.track, store.StartOf(f.event));
        if (host < 0 || launched > n.start) continue;
        n.launch_host = host;
        n.launch_offset = launched - nodes[host].start;
        ready = std::max(ready, launched);
      }
    }
    n.latency = std::max<int64_t>(0, n.start - ready);
  }
  // The change, on durations.
  auto apply = [&](bool changed) {
    out.units_changed = 0;
    for (Node& n : nodes) n.duration = n.end - n.start;
    if (!changed) return;
    if (change.kind == WhatIf::Kind::kOp) {
      const auto name = store.FindString(change.name);
      if (!name) return;
      for (Node& n : nodes) {
        const TrackUnits& t = tracks[n.track];
        const EventRef& e = t.units[n.index].event;
        const SliceColumns& s = store.data(t.track).slices;
        // Time in slices of that name within the unit (itself included;
        // nested ones counted once, at their outermost).
        int64_t named = 0, covered_to = std::numeric_limits<int64_t>::min();
        for (uint32_t d = s.depth(e.index); d < s.depth_count(); ++d) {
          for (uint32_t i = s.depth_begin(d); i < s.depth_end(d); ++i) {
            if (s.start(i) >= n.end) break;
            if (s.end(i) <= n.start || s.name(i) != *name) continue;
            if (s.start(i) < covered_to) continue;
            named += std::min(s.end(i), n.end) - std::max(s.start(i), n.start);
            covered_to = s.end(i);
          }
        }
        if (named <= 0) continue;
        n.duration += static_cast<int64_t>(
            std::llround(static_cast<double>(named) * (change.factor - 1)));
        n.duration = std::max<int64_t>(n.duration, 0);
        ++out.units_changed;
      }
    } else if (change.kind == WhatIf::Kind::kLoaderMedian) {
      std::vector<int64_t> per_rank(steps.ranks.size(), 0);
      auto loader = [&](const Node& n) {
        const TrackUnits& t = tracks[n.track];
        return !t.device &&
               (base::ContainsIgnoreCase(store.tracks()[t.track].name,
                                         "loader") ||
                base::ContainsIgnoreCase(
                    store.str(store.NameOf(t.units[n.index].event)), "loader"));
      };
      for (const Node& n : nodes) {
        if (loader(n)) per_rank[tracks[n.track].rank] += n.end - n.start;
      }
      const int64_t median = base::Median(per_rank);
      for (Node& n : nodes) {
        const size_t r = tracks[n.track].rank;
        if (steps.ranks[r].rank != change.rank || !loader(n) ||
            per_rank[r] <= 0) {
          continue;
        }
        n.duration = static_cast<int64_t>(std::llround(
            static_cast<double>(n.duration) * static_cast<double>(median) /
            static_cast<double>(per_rank[r])));
        ++out.units_changed;
      }
    }
  };
  // Forward in the order units started: every dependency started earlier.
  std::vector<int> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return nodes[a].start < nodes[b].start;
  });
  const bool no_wait = change.kind == WhatIf::Kind::kNoCollectiveWait;
  auto run = [&](bool changed) {
    apply(changed);
    // A collective's end waits for every member's new start; its members
    // all started (as recorded) before anything after it did, so in this
    // order they are placed when the end is first asked for.
    auto end_of = [&](const Node& n) {
      if (n.collective < 0) return n.new_start + n.duration;
      if (changed && no_wait) return n.new_start + transfer[n.collective];
      int64_t last = std::numeric_limits<int64_t>::min();
      for (int m : members[n.collective]) {
        last = std::max(last, nodes[m].new_start);
      }
      return last + transfer[n.collective];
    };
    for (int i : order) {
      Node& n = nodes[i];
      int64_t ready = n.prev >= 0 ? end_of(nodes[n.prev]) : w0;
      if (n.launch_host >= 0) {
        const Node& h = nodes[n.launch_host];
        const double scale = h.end > h.start
                                 ? static_cast<double>(h.duration) /
                                       static_cast<double>(h.end - h.start)
                                 : 1.0;
        ready = std::max(
            ready,
            h.new_start + static_cast<int64_t>(std::llround(
                              static_cast<double>(n.launch_offset) * scale)));
      }
      n.new_start = ready + n.latency;
    }
    int64_t end = w0;
    for (const Node& n : nodes) end = std::max(end, end_of(n));
    return end - w0;
  };
  out.modelled_ns = run(false);
  out.changed_ns = run(true);
  return out;
}

}  // namespace podscope::viewer
