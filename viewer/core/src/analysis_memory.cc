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

}  // namespace

std::vector<DeviceMemory> AnalyzeMemory(const TraceStore& store,
                                        const PodAnalysisOptions& options) {
  std::map<std::pair<ProcessId, int32_t>, DeviceMemory> devices;
  const pod::Keys keys(store);
  const std::optional<StringId> allocate = store.FindString("Allocate");
  const std::optional<StringId> free_name = store.FindString("Free");
  auto init = [&](DeviceMemory& m, const TrackInfo& t, int32_t dev) {
    const ProcessInfo& p = store.processes()[t.process];
    m.rank = pod::RankOfProcess(t.process);
    m.host = p.host;
    m.host_name = p.host_name;
    m.device_id = dev;
  };
  if (allocate) {
    for (const TrackInfo& t : store.tracks()) {
      const TrackData& data = store.data(t.id);
      const InstantColumns& in = data.instants;
      // Instants: (time, +bytes / -bytes, buffer, in_use) in time order.
      struct Event {
        bool alloc;
        uint32_t index;
        int64_t buffer;
        int64_t bytes;
        std::optional<int64_t> in_use;
      };
      std::vector<Event> events;
      pod::ArgsCursor args_of(store.data(t.id).args);
      for (uint32_t i = 0; i < in.size(); ++i) {
        const bool is_alloc = in.names[i] == *allocate;
        if (!is_alloc && (!free_name || in.names[i] != *free_name)) continue;
        const trace_format::EventArgs* args =
            args_of.Find(trace_format::EventKind::kInstant, i);
        Event e;
        e.alloc = is_alloc;
        e.index = i;
        e.buffer = pod::IntArg(args, keys.buffer_id).value_or(-1);
        e.bytes = pod::NonNegative(pod::IntArg(args, keys.bytes).value_or(0));
        e.in_use = pod::IntArg(args, keys.in_use);
        events.push_back(e);
      }
      if (events.empty()) continue;
      const int32_t dev = DeviceOf(t);
      DeviceMemory& m = devices[{t.process, dev}];
      init(m, t, dev);
      m.from_allocations = true;
      // Pass 1: the peak.
      int64_t running = 0, peak = -1;
      size_t peak_at = 0;
      for (size_t k = 0; k < events.size(); ++k) {
        const Event& e = events[k];
        running = e.alloc ? base::SaturatingAdd(running, e.bytes)
                          : base::SaturatingSub(running, e.bytes);
        const int64_t now = e.in_use.value_or(running);
        if (e.alloc) {
          ++m.allocations;
        } else {
          ++m.frees;
        }
        if (now > peak) {
          peak = now;
          peak_at = k;
        }
      }
      m.peak_bytes = std::max<int64_t>(peak, 0);
      m.peak_ns = in.ts[events[peak_at].index];
      // Pass 2: replay to the peak.
      absl::flat_hash_map<int64_t, LiveBuffer> live;
      for (size_t k = 0; k <= peak_at; ++k) {
        const Event& e = events[k];
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
      m.live_count = live.size();
      for (auto& [id, b] : live) m.live_at_peak.push_back(std::move(b));
      std::sort(m.live_at_peak.begin(), m.live_at_peak.end(),
                [](const LiveBuffer& a, const LiveBuffer& b) {
                  if (a.bytes != b.bytes) return a.bytes > b.bytes;
                  return a.buffer_id < b.buffer_id;
                });
      if (options.top > 0 && m.live_at_peak.size() > options.top) {
        m.live_at_peak.resize(options.top);
      }
    }
  }
  // Counter fallback.
  for (const TrackInfo& t : store.tracks()) {
    if (t.kind != trace_format::proto::TRACK_KIND_COUNTER ||
        !base::ContainsIgnoreCase(t.name, "memory in use")) {
      continue;
    }
    const CounterColumns& c = store.data(t.id).counters;
    if (c.size() == 0) continue;
    const int32_t dev = DeviceOf(t);
    auto [it, inserted] = devices.try_emplace({t.process, dev});
    if (!inserted && it->second.from_allocations) continue;
    DeviceMemory& m = it->second;
    if (inserted) init(m, t, dev);
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
  std::vector<DeviceMemory> out;
  for (auto& [key, m] : devices) out.push_back(std::move(m));
  return out;
}

}  // namespace podscope::viewer
