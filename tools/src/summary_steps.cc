#include "summary_steps.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

#include "podscope/base/strings.h"
#include "podscope/viewer/step_names.h"

namespace podscope::tools {
namespace {

using trace_format::EventKind;
using trace_format::FlowLink;
using trace_format::FlowPhase;
using trace_format::Slice;
using trace_format::TrackEvents;

bool IsSliceFlow(const FlowLink& f, const TrackEvents& e) {
  return f.kind == EventKind::kSlice && f.index < e.slices.size();
}

}  // namespace

void StepWindows::AddTrack(const trace_format::TraceReader& reader,
                           trace_format::proto::TrackKind kind,
                           const TrackEvents& e) {
  if (kind == trace_format::proto::TRACK_KIND_THREAD) {
    AddThread(reader, e);
  } else if (kind == trace_format::proto::TRACK_KIND_DEVICE_STREAM) {
    AddDeviceStream(e);
  }
}

void StepWindows::AddThread(const trace_format::TraceReader& reader,
                            const TrackEvents& e) {
  std::vector<Step> steps;
  absl::flat_hash_map<uint32_t, bool> is_step;
  int64_t open_step_end = std::numeric_limits<int64_t>::min();
  for (const Slice& s : e.slices) {  // reader order: start, then longest
    if (s.start_ns < open_step_end) continue;  // inside a step
    auto [it, inserted] = is_step.try_emplace(s.name, false);
    if (inserted) it->second = viewer::IsStepName(reader.GetString(s.name));
    if (!it->second) continue;
    steps.push_back({s.start_ns, s.end_ns(), {}});
    open_step_end = s.end_ns();
  }
  if (steps.empty()) return;
  // Flows leaving slices that start inside a step belong to it.
  for (const FlowLink& f : e.flows) {
    if (!IsSliceFlow(f, e) || f.phase == FlowPhase::kEnd) continue;
    const int64_t t = e.slices[f.index].start_ns;
    auto after =
        std::upper_bound(steps.begin(), steps.end(), t,
                         [](int64_t v, const Step& s) { return v < s.start; });
    if (after == steps.begin()) continue;
    Step& s = *std::prev(after);
    if (t < s.end) s.launches.push_back(f.flow_id);
  }
  steps_by_track_.push_back(std::move(steps));
}

void StepWindows::AddDeviceStream(const TrackEvents& e) {
  // Executions start at the slices flows arrive at.
  std::vector<std::pair<int64_t, uint64_t>> arrivals;
  for (const FlowLink& f : e.flows) {
    if (!IsSliceFlow(f, e) || f.phase == FlowPhase::kBegin) continue;
    arrivals.push_back({e.slices[f.index].start_ns, f.flow_id});
  }
  if (arrivals.empty()) return;
  std::sort(arrivals.begin(), arrivals.end());
  // Slices are sorted by start: each execution runs until the next one
  // starts and ends with the last end among its slices.
  size_t next_slice = static_cast<size_t>(
      std::lower_bound(
          e.slices.begin(), e.slices.end(), arrivals[0].first,
          [](const Slice& s, int64_t v) { return s.start_ns < v; }) -
      e.slices.begin());
  for (size_t a = 0; a < arrivals.size();) {
    const int64_t start = arrivals[a].first;
    size_t b = a;
    while (b < arrivals.size() && arrivals[b].first == start) ++b;
    const int64_t limit = b < arrivals.size()
                              ? arrivals[b].first
                              : std::numeric_limits<int64_t>::max();
    int64_t end = start;
    while (next_slice < e.slices.size() &&
           e.slices[next_slice].start_ns < limit) {
      end = std::max(end, e.slices[next_slice].end_ns());
      ++next_slice;
    }
    for (size_t k = a; k < b; ++k) {
      int64_t& slot = execution_end_[arrivals[k].second];
      slot = std::max(slot, end);
    }
    a = b;
  }
}

std::vector<int64_t> StepWindows::Durations() const {
  std::vector<int64_t> out;
  for (const std::vector<Step>& steps : steps_by_track_) {
    int64_t previous_end = std::numeric_limits<int64_t>::min();
    for (const Step& s : steps) {
      int64_t device_end = s.end;
      for (uint64_t id : s.launches) {
        auto it = execution_end_.find(id);
        if (it != execution_end_.end()) {
          device_end = std::max(device_end, it->second);
        }
      }
      const int64_t start = std::max(s.start, previous_end);
      const int64_t end = std::max(device_end, start);
      out.push_back(end - start);
      previous_end = end;
    }
  }
  return out;
}

}  // namespace podscope::tools
