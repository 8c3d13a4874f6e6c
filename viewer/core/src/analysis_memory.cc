// Device memory: the peak of bytes in use per device from Allocate/Free
// instants (else the `memory in use` counter) and the buffers live at the
// peak (pod_analysis.h).
#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"
#include "podscope/base/strings.h"

namespace podscope::viewer {
namespace {

// N of "device N ...", else the track's device id.
int32_t DeviceOf(const TrackInfo& t) {
  std::string_view n = t.name;
  if (n.starts_with("device ")) {
    n.remove_prefix(7);
    const size_t sp = n.find(' ');
    int32_t v = 0;
    if (absl::SimpleAtoi(std::string(n.substr(0, sp)), &v) && v >= 0) return v;
  }
  return t.device_id;
}

using DeviceKey = std::pair<ProcessId, int32_t>;

void DescribeDevice(const TraceStore& store, const TrackInfo& t, int32_t dev,
                    DeviceMemory* m) {
  const ProcessInfo& p = store.processes()[t.process];
  m->rank = pod::RankOfProcess(t.process);
  m->host = p.host;
  m->host_name = p.host_name;
  m->device_id = dev;
}

// An Allocate (+bytes) or Free (-bytes) instant of a buffer, with the
// `in_use` it recorded.
struct MemoryEvent {
  bool alloc;
  uint32_t index;
  int64_t buffer;
  int64_t bytes;
  std::optional<int64_t> in_use;
};

// A track's Allocate and Free instants, in time order.
std::vector<MemoryEvent> FindMemoryEvents(const TraceStore& store,
                                          const TrackInfo& t,
                                          const pod::Keys& keys,
                                          StringId allocate,
                                          std::optional<StringId> free_name) {
  const InstantColumns& in = store.data(t.id).instants;
  std::vector<MemoryEvent> events;
  pod::ArgsCursor args_of(store.data(t.id).args);
  for (uint32_t i = 0; i < in.size(); ++i) {
    const bool is_alloc = in.names[i] == allocate;
    if (!is_alloc && (!free_name || in.names[i] != *free_name)) continue;
    const trace_format::EventArgs* args =
        args_of.Find(trace_format::EventKind::kInstant, i);
    MemoryEvent e;
    e.alloc = is_alloc;
    e.index = i;
    e.buffer = pod::IntArg(args, keys.buffer_id).value_or(-1);
    e.bytes = pod::NonNegative(pod::IntArg(args, keys.bytes).value_or(0));
    e.in_use = pod::IntArg(args, keys.in_use);
    events.push_back(e);
  }
  return events;
}

// Counts the allocations and frees, and sets the peak of bytes in use (the
// recorded `in_use`, else the running sum). Returns the peak's event.
size_t FindPeak(const InstantColumns& in,
                const std::vector<MemoryEvent>& events, DeviceMemory* m) {
  int64_t running = 0, peak = -1;
  size_t peak_at = 0;
  for (size_t k = 0; k < events.size(); ++k) {
    const MemoryEvent& e = events[k];
    running = e.alloc ? base::SaturatingAdd(running, e.bytes)
                      : base::SaturatingSub(running, e.bytes);
    const int64_t now = e.in_use.value_or(running);
    if (e.alloc) {
      ++m->allocations;
    } else {
      ++m->frees;
    }
    if (now > peak) {
      peak = now;
      peak_at = k;
    }
  }
  m->peak_bytes = std::max<int64_t>(peak, 0);
  m->peak_ns = in.ts[events[peak_at].index];
  return peak_at;
}

// Replays the events up to the peak: the buffers live then, largest first.
void ListLiveAtPeak(const TraceStore& store, const TrackInfo& t,
                    const pod::Keys& keys,
                    const std::vector<MemoryEvent>& events, size_t peak_at,
                    const PodAnalysisOptions& options, DeviceMemory* m) {
  const InstantColumns& in = store.data(t.id).instants;
  absl::flat_hash_map<int64_t, LiveBuffer> live;
  for (size_t k = 0; k <= peak_at; ++k) {
    const MemoryEvent& e = events[k];
    if (!e.alloc) {
      live.erase(e.buffer);
      continue;
    }
    const trace_format::EventArgs* args =
        store.FindArgs({t.id, trace_format::EventKind::kInstant, e.index});
    LiveBuffer b;
    b.buffer_id = e.buffer;
    b.bytes = e.bytes;
    b.op = pod::TextArg(store, args, keys.op).value_or("");
    b.scope = pod::TextArg(store, args, keys.scope).value_or("");
    b.allocated_ns = in.ts[e.index];
    live[e.buffer] = std::move(b);
  }
  m->live_count = live.size();
  for (auto& [id, b] : live) m->live_at_peak.push_back(std::move(b));
  std::sort(m->live_at_peak.begin(), m->live_at_peak.end(),
            [](const LiveBuffer& a, const LiveBuffer& b) {
              if (a.bytes != b.bytes) return a.bytes > b.bytes;
              return a.buffer_id < b.buffer_id;
            });
  if (options.top > 0 && m->live_at_peak.size() > options.top) {
    m->live_at_peak.resize(options.top);
  }
}

// The devices whose tracks record Allocate/Free instants.
void AddAllocationPeaks(const TraceStore& store,
                        const PodAnalysisOptions& options,
                        std::map<DeviceKey, DeviceMemory>* devices) {
  const std::optional<StringId> allocate = store.FindString("Allocate");
  if (!allocate) return;
  const std::optional<StringId> free_name = store.FindString("Free");
  const pod::Keys keys(store);
  for (const TrackInfo& t : store.tracks()) {
    const std::vector<MemoryEvent> events =
        FindMemoryEvents(store, t, keys, *allocate, free_name);
    if (events.empty()) continue;
    const int32_t dev = DeviceOf(t);
    DeviceMemory& m = (*devices)[{t.process, dev}];
    DescribeDevice(store, t, dev, &m);
    m.from_allocations = true;
    const size_t peak_at = FindPeak(store.data(t.id).instants, events, &m);
    ListLiveAtPeak(store, t, keys, events, peak_at, options, &m);
  }
}

// The peak of a `memory in use` counter, for devices without allocations.
void AddCounterPeaks(const TraceStore& store,
                     std::map<DeviceKey, DeviceMemory>* devices) {
  for (const TrackInfo& t : store.tracks()) {
    if (t.kind != trace_format::proto::TRACK_KIND_COUNTER ||
        !base::ContainsIgnoreCase(t.name, "memory in use")) {
      continue;
    }
    const CounterColumns& c = store.data(t.id).counters;
    if (c.size() == 0) continue;
    const int32_t dev = DeviceOf(t);
    auto [it, inserted] = devices->try_emplace({t.process, dev});
    if (!inserted && it->second.from_allocations) continue;
    DeviceMemory& m = it->second;
    if (inserted) DescribeDevice(store, t, dev, &m);
    for (uint32_t i = 0; i < c.size(); ++i) {
      const double v = c.values[i];
      if (!(v == v) || v > 9.2e18) continue;
      const int64_t b = static_cast<int64_t>(v);
      if (b > m.peak_bytes) {
        m.peak_bytes = b;
        m.peak_ns = c.ts[i];
      }
    }
  }
}

}  // namespace

std::vector<DeviceMemory> AnalyzeMemory(const TraceStore& store,
                                        const PodAnalysisOptions& options) {
  std::map<DeviceKey, DeviceMemory> devices;
  AddAllocationPeaks(store, options, &devices);
  AddCounterPeaks(store, &devices);
  std::vector<DeviceMemory> out;
  for (auto& [key, m] : devices) out.push_back(std::move(m));
  return out;
}

}  // namespace podscope::viewer
