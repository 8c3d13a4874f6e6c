#include "profiler_observer.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "instrumentation.h"
#include "podscope/profiler/recorder.h"
#include "podscope/profiler/session.h"

namespace podscope::runtime::internal {
namespace {

struct DeviceTracks {
  profiler::TrackHandle stream;
  profiler::TrackHandle transfers;
  profiler::TrackHandle steps;
  profiler::TrackHandle memory;
  profiler::TrackHandle allocations;
};

class ProfilerObserver : public RuntimeObserver {
 public:
  // Registers `device`'s tracks (once); returns true the first time.
  bool Register(const Device& device) {
    std::lock_guard<std::mutex> lock(mu_);
    if (tracks_.contains(device.id())) return false;
    tracks_.emplace(device.id(), MakeTracks(device));
    return true;
  }

  DeviceTracks Tracks(const Device* device) {
    if (device == nullptr) return {};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tracks_.find(device->id());
    if (it == tracks_.end()) {
      it = tracks_.emplace(device->id(), MakeTracks(*device)).first;
    }
    return it->second;
  }

  void OnTransfer(const TransferEvent& event) override {
    if (!profiler::IsRecording()) return;
    const DeviceTracks tracks = Tracks(event.device);
    if (event.source != nullptr) {
      profiler::RecordSlice(tracks.transfers, event.start_ns, event.end_ns,
                            "CopyFromDevice", 0,
                            {{"bytes", event.bytes},
                             {"ok", int64_t{event.status.ok()}},
                             {"from_device", int64_t{event.source->id()}}});
      return;
    }
    profiler::RecordSlice(
        tracks.transfers, event.start_ns, event.end_ns,
        event.to_device ? "TransferToDevice" : "TransferFromDevice", 0,
        {{"bytes", event.bytes}, {"ok", int64_t{event.status.ok()}}});
  }

  void OnOp(const OpEvent& event) override {
    if (!profiler::IsRecording()) return;
    const DeviceTracks tracks = Tracks(event.device);
    thread_local std::string name;
    name.clear();
    if (!event.scope.empty()) {
      name.append(event.scope);
      name.push_back('/');
    }
    name.append(event.op_name);
    profiler::RecordSlice(
        tracks.stream, event.start_ns, event.end_ns, name, event.flow_id,
        {{"graph_hash", static_cast<int64_t>(event.graph_fingerprint)},
         {"fused_ops", int64_t{event.num_fused_ops}},
         {"op", event.op_name},
         {"flops", event.flops},
         {"bytes_accessed", event.bytes_accessed},
         {"shape", event.shape},
         {"operand_shapes", event.operand_shapes}});
  }

  void OnStep(const StepEvent& event) override {
    if (!profiler::IsRecording()) return;
    const DeviceTracks tracks = Tracks(event.device);
    profiler::RecordCounterValue(tracks.steps, event.time_ns,
                                 static_cast<double>(event.step));
  }

  void OnMemory(const MemoryEvent& event) override {
    if (!profiler::IsRecording()) return;
    DeviceTracks tracks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tracks_.find(event.device_id);
      if (it == tracks_.end()) return;  // a device never attached
      tracks = it->second;
    }
    if (event.allocated) {
      profiler::RecordInstant(tracks.allocations, event.time_ns, "Allocate",
                              {{"buffer_id", event.buffer_id},
                               {"bytes", event.bytes},
                               {"in_use", event.bytes_in_use},
                               {"op", event.op},
                               {"scope", event.scope}});
    } else {
      profiler::RecordInstant(tracks.allocations, event.time_ns, "Free",
                              {{"buffer_id", event.buffer_id},
                               {"bytes", event.bytes},
                               {"in_use", event.bytes_in_use}});
    }
    profiler::RecordCounterValue(tracks.memory, event.time_ns,
                                 static_cast<double>(event.bytes_in_use));
  }

  void OnMetric(const MetricEvent& event) override {
    if (!profiler::IsRecording()) return;
    profiler::RecordCounterValue(MetricTrack(event), event.time_ns,
                                 event.value);
  }

 private:
  static DeviceTracks MakeTracks(const Device& device) {
    const int id = device.id();
    DeviceTracks t;
    t.stream = profiler::RegisterDeviceStreamTrack(
        id, 0, absl::StrCat("device ", id, " (", device.kind(), ") stream"));
    t.transfers = profiler::RegisterDeviceStreamTrack(
        id, 1, absl::StrCat("device ", id, " transfers"));
    t.allocations = profiler::RegisterDeviceStreamTrack(
        id, 2, absl::StrCat("device ", id, " allocations"));
    t.steps = profiler::RegisterCounterTrack(
        absl::StrCat("device ", id, " lazy step"), "step");
    t.memory = profiler::RegisterCounterTrack(
        absl::StrCat("device ", id, " memory in use"), "bytes");
    return t;
  }

  // "runtime <metric>": timers in ns per sample, counters as totals.
  profiler::TrackHandle MetricTrack(const MetricEvent& event) {
    const absl::string_view name(event.name.data(), event.name.size());
    std::lock_guard<std::mutex> lock(mu_);
    auto it = metric_tracks_.find(name);
    if (it == metric_tracks_.end()) {
      it = metric_tracks_
               .emplace(std::string(name), profiler::RegisterCounterTrack(
                                               absl::StrCat("runtime ", name),
                                               event.is_timer ? "ns" : "count"))
               .first;
    }
    return it->second;
  }

  std::mutex mu_;
  absl::flat_hash_map<int, DeviceTracks> tracks_;
  absl::flat_hash_map<std::string, profiler::TrackHandle> metric_tracks_;
};

ProfilerObserver& TheObserver() {
  // Process lifetime: stream threads may report until the very end.
  static ProfilerObserver* const observer = new ProfilerObserver();
  return *observer;
}

}  // namespace

void AttachProfiler(int process_index, int process_count,
                    absl::Span<Device* const> addressable_devices) {
  ProfilerObserver& observer = TheObserver();
  profiler::SetProcessInfo(process_index, process_count);
  for (const Device* device : addressable_devices) {
    if (!observer.Register(*device)) continue;
    const DeviceTracks tracks = observer.Tracks(device);
    trace_format::proto::Device d;
    d.set_global_id(device->id());
    d.set_local_hardware_id(device->local_hardware_id());
    d.set_process_index(device->process_index());
    d.set_kind(device->kind());
    std::string platform = device->kind();
    std::transform(platform.begin(), platform.end(), platform.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    d.set_platform(platform);
    d.add_stream_track_ids(tracks.stream.id);
    d.add_stream_track_ids(tracks.transfers.id);
    d.add_stream_track_ids(tracks.allocations.id);
    profiler::AddDevice(d);
  }
  SetRuntimeObserverIfUnset(&observer);
}

profiler::TrackHandle StreamTrackOf(const Device& device) {
  return TheObserver().Tracks(&device).stream;
}

}  // namespace podscope::runtime::internal
