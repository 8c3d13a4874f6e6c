#include "pod_views.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/human_format.h"
#include "podscope/viewer/analysis_labels.h"
#include "time_format.h"

namespace podscope::viewer::app {
namespace {

PodView TimeView(const StepBreakdown& steps) {
  PodView v;
  v.title = "Time";
  v.note = steps.rows.empty()
               ? "No step markers: nothing to break down."
               : "Where each rank's step time went; click a rank to show its "
                 "slowest step.";
  v.columns = {"rank", "steps", "median"};
  for (int c = 0; c < kStepCategoryCount; ++c) {
    v.columns.emplace_back(StepCategoryName(static_cast<StepCategory>(c)));
  }
  for (size_t i = 0; i < steps.totals.size(); ++i) {
    const RankStepTotals& t = steps.totals[i];
    PodView::Row row;
    row.cells = {RankLabel(steps, static_cast<int>(i)), absl::StrCat(t.steps),
                 FormatDuration(t.median_ns)};
    for (int c = 0; c < kStepCategoryCount; ++c) {
      row.cells.push_back(
          t.total_ns > 0 ? FormatShare(static_cast<double>(t.category_ns[c]) /
                                       static_cast<double>(t.total_ns))
                         : "-");
    }
    // The rank's slowest step: selected, so that the timeline brings that
    // rank's track into view as well as its time.
    int64_t longest = -1;
    for (const StepRow& r : steps.rows) {
      if (i < r.ranks.size() && r.ranks[i].present &&
          r.ranks[i].duration_ns > longest) {
        longest = r.ranks[i].duration_ns;
        row.event = r.ranks[i].event;
        row.t0 = r.ranks[i].start_ns;
        row.t1 = r.ranks[i].start_ns + std::max<int64_t>(longest, 1);
      }
    }
    v.rows.push_back(std::move(row));
  }
  return v;
}

// The longest slice of each wanted (host, device or -1, name) on the
// store's thread and device tracks: where a top-work row leads.
std::map<std::tuple<HostId, int32_t, StringId>, EventRef> LongestOf(
    const TraceStore& store,
    const std::map<std::tuple<HostId, int32_t, StringId>, EventRef>& wanted) {
  std::map<std::tuple<HostId, int32_t, StringId>, EventRef> out;
  std::map<std::tuple<HostId, int32_t, StringId>, int64_t> best;
  for (const TrackInfo& info : store.tracks()) {
    const bool device =
        info.kind == trace_format::proto::TRACK_KIND_DEVICE_STREAM;
    if (!device && info.kind != trace_format::proto::TRACK_KIND_THREAD) {
      continue;
    }
    const HostId host = store.processes()[info.process].host;
    const int32_t dev = device ? std::max<int32_t>(info.device_id, 0) : -1;
    const SliceColumns& s = store.data(info.id).slices;
    for (uint32_t i = 0; i < s.size(); ++i) {
      const auto key = std::make_tuple(host, dev, s.name(i));
      if (!wanted.contains(key)) continue;
      auto [it, fresh] = best.try_emplace(key, -1);
      if (s.duration(i) > it->second) {
        it->second = s.duration(i);
        out[key] = {info.id, trace_format::EventKind::kSlice, i};
      }
    }
  }
  return out;
}

PodView TopWorkView(const TraceStore& store, const TopWork& top) {
  PodView v;
  v.title = "Top work";
  v.columns = {"where", "name", "count", "self", "total", "of steps"};
  std::vector<const WorkEntry*> entries;
  for (const WorkEntry& e : top.device_ops) entries.push_back(&e);
  for (const WorkEntry& e : top.host_scopes) entries.push_back(&e);
  v.note = entries.empty()
               ? "No slices on threads or device streams."
               : "Ops and scopes by self time, per device and host; click "
                 "one to show its longest slice.";
  std::map<std::tuple<HostId, int32_t, StringId>, EventRef> wanted;
  for (const WorkEntry* e : entries) {
    if (auto id = store.FindString(e->name)) {
      wanted[{e->host, e->device_id, *id}] = {};
    }
  }
  const auto longest = LongestOf(store, wanted);
  for (const WorkEntry* e : entries) {
    PodView::Row row;
    row.cells = {e->device_id >= 0
                     ? absl::StrCat(e->host_name, " device ", e->device_id)
                     : absl::StrCat(e->host_name, " host"),
                 e->name,
                 absl::StrCat(e->count),
                 FormatDuration(e->self_ns),
                 FormatDuration(e->total_ns),
                 e->step_share > 0 ? FormatShare(e->step_share) : "-"};
    if (auto id = store.FindString(e->name)) {
      auto it = longest.find({e->host, e->device_id, *id});
      if (it != longest.end()) row.event = it->second;
    }
    v.rows.push_back(std::move(row));
  }
  return v;
}

PodView OpsView(const TraceStore& store, const OpProfile& ops) {
  PodView v;
  v.title = "Op profile";
  v.columns = {"host",    "op",     "count", "time",
               "GFLOP/s", "flop/B", "bound", "of bound"};
  std::string peaks;
  for (const HostPeak& h : ops.peaks) {
    absl::StrAppend(
        &peaks, peaks.empty() ? "" : "; ", h.host_name, " ",
        absl::StrFormat("%.1f GFLOP/s, %.1f GB/s", h.peak_gflops, h.peak_gbps),
        h.understated ? " (recorded peak understated: raised to "
                        "what kernels reached)"
                      : "");
  }
  v.note = ops.by_kind.empty()
               ? "No kernels with flops or bytes_accessed arguments."
               : absl::StrCat("Kernels by op kind against the roofline. Peak: ",
                              peaks.empty() ? "unknown" : peaks, ".");
  for (const RooflineEntry& e : ops.by_kind) {
    PodView::Row row;
    row.cells = {
        e.host < store.hosts().size() ? store.hosts()[e.host].name : "",
        e.name,
        absl::StrCat(e.count),
        FormatDuration(e.time_ns),
        absl::StrFormat("%.2f", e.gflops),
        absl::StrFormat("%.2f", e.intensity),
        e.bound_gflops > 0 ? absl::StrFormat("%.1f %s", e.bound_gflops,
                                             e.memory_bound ? "mem" : "compute")
                           : "-",
        e.bound_gflops > 0 ? FormatShare(e.fraction_of_bound) : "-"};
    v.rows.push_back(std::move(row));
  }
  return v;
}

PodView MemoryView(const TraceStore& store,
                   const std::vector<DeviceMemory>& memory) {
  PodView v;
  v.title = "Memory";
  v.columns = {"device", "peak", "into the trace", "buffer",
               "bytes",  "op",   "scope"};
  v.note = memory.empty()
               ? "No device allocations recorded."
               : "Each device's memory peak and the buffers live at it; "
                 "click one to show the moment of the peak.";
  for (const DeviceMemory& m : memory) {
    const std::string device =
        absl::StrCat(m.host_name, " device ", m.device_id);
    auto add = [&](std::vector<std::string> cells) {
      PodView::Row row;
      row.cells = std::move(cells);
      // A window around the peak that shows the allocations before it.
      row.t0 = m.peak_ns - 1'000'000;
      row.t1 = m.peak_ns + 1'000'000;
      v.rows.push_back(std::move(row));
    };
    add({device, base::FormatBytes(m.peak_bytes),
         FormatDuration(m.peak_ns - store.first_ns()), "", "", "", ""});
    for (const LiveBuffer& b : m.live_at_peak) {
      add({"", "", "", absl::StrCat(b.buffer_id), base::FormatBytes(b.bytes),
           b.op, b.scope});
    }
  }
  return v;
}

}  // namespace

std::vector<PodView> BuildPodViews(const TraceStore& store,
                                   const StepBreakdown& steps) {
  PodAnalysisOptions options;
  options.top = 20;
  std::vector<PodView> out;
  out.push_back(TimeView(steps));
  out.push_back(TopWorkView(store, AnalyzeTopWork(store, steps, options)));
  out.push_back(OpsView(store, AnalyzeOps(store, options)));
  out.push_back(MemoryView(store, AnalyzeMemory(store, options)));
  return out;
}

}  // namespace podscope::viewer::app
