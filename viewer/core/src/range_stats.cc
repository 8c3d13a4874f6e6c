// RangeStats and StepTable: aggregations of slices by name.
#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "name_match.h"
#include "podscope/base/parallel.h"
#include "podscope/viewer/analysis.h"

namespace podscope::viewer {

std::vector<NameStats> RangeStats(const TraceStore& store, int64_t t0,
                                  int64_t t1, const StatsOptions& options) {
  const std::vector<TrackId> tracks =
      internal::TracksOrAll(store, options.tracks);
  std::vector<absl::flat_hash_map<StringId, SliceTimeStats>> per_track(
      tracks.size());
  base::ParallelFor(options.threads, tracks.size(), [&](size_t k) {
    const SliceColumns& s = store.data(tracks[k]).slices;
    auto& acc = per_track[k];
    for (uint32_t d = 0; d < s.depth_count(); ++d) {
      const uint32_t lo =
          s.FirstEndingAfter(s.depth_begin(d), s.depth_end(d), t0);
      const uint32_t hi = s.FirstStartingAtOrAfter(lo, s.depth_end(d), t1);
      s.ForEachSelfTime(lo, hi, [&](uint32_t i, int64_t self) {
        acc[s.name(i)].Add(s.duration(i), self);
      });
    }
  });
  absl::flat_hash_map<std::tuple<StringId, HostId, ProcessId>, NameStats>
      merged;
  for (size_t k = 0; k < tracks.size(); ++k) {
    const ProcessId process_id = store.tracks()[tracks[k]].process;
    const HostId host = options.by_host || options.by_process
                            ? store.processes()[process_id].host
                            : kAllHosts;
    const ProcessId process = options.by_process ? process_id : kAllProcesses;
    for (const auto& [name, st] : per_track[k]) {
      NameStats& into = merged[{name, host, process}];
      into.name = name;
      into.host = host;
      into.process = process;
      into.Merge(st);
    }
  }
  std::vector<NameStats> out;
  out.reserve(merged.size());
  for (auto& [key, st] : merged) out.push_back(st);
  std::sort(out.begin(), out.end(),
            [&](const NameStats& a, const NameStats& b) {
              if (a.total_ns != b.total_ns) return LongerTotal(a, b);
              if (a.name != b.name)
                return store.str(a.name) < store.str(b.name);
              if (a.host != b.host) return a.host < b.host;
              return a.process < b.process;
            });
  return out;
}

std::vector<HostSteps> StepTable(const TraceStore& store,
                                 const StepOptions& options) {
  std::vector<HostSteps> out;
  auto matches_or = internal::MatchNames(store, options.markers, false,
                                         options.case_sensitive);
  if (!matches_or.ok()) return out;
  const std::vector<char>& matches = *matches_or;
  for (const HostInfo& host : store.hosts()) {
    HostSteps hs;
    hs.host = host.id;
    hs.host_name = host.name;
    for (ProcessId p : host.processes) {
      for (TrackId t : store.processes()[p].tracks) {
        const SliceColumns& s = store.data(t).slices;
        std::vector<std::tuple<int64_t, int64_t, uint32_t>> found;
        for (uint32_t i = 0; i < s.size(); ++i) {
          const StringId n = s.name(i);
          if (n < matches.size() && matches[n]) {
            found.emplace_back(s.start(i), -s.end(i), i);
          }
        }
        std::sort(found.begin(), found.end());
        // Only the outermost: a step inside a step is a part of it.
        int64_t outer_end = kBeginningOfTime;
        bool any = false;
        for (const auto& [start, neg_end, i] : found) {
          const int64_t end = -neg_end;
          if (any && end <= outer_end) continue;
          any = true;
          outer_end = end;
          hs.steps.push_back({{t, trace_format::EventKind::kSlice, i},
                              start,
                              s.duration(i),
                              s.name(i)});
        }
      }
    }
    if (hs.steps.empty()) continue;
    std::stable_sort(
        hs.steps.begin(), hs.steps.end(),
        [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
    hs.count = hs.steps.size();
    hs.min_ns = hs.steps.front().duration_ns;
    hs.max_ns = hs.min_ns;
    for (const Step& st : hs.steps) {
      hs.total_ns += st.duration_ns;
      hs.min_ns = std::min(hs.min_ns, st.duration_ns);
      hs.max_ns = std::max(hs.max_ns, st.duration_ns);
    }
    out.push_back(std::move(hs));
  }
  return out;
}

}  // namespace podscope::viewer
