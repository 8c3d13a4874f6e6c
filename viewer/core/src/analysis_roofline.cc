// The op profile: flops and bytes of device kernels per op name and op
// kind per host, against the host's measured peaks (pod_analysis.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"

namespace podscope::viewer {
namespace {

double Attribute(const ProcessInfo& p, const std::string& key) {
  const auto& attrs = p.metadata.attributes();
  auto it = attrs.find(key);
  double v = 0;
  if (it == attrs.end() || !absl::SimpleAtod(it->second, &v) ||
      !std::isfinite(v) || v < 0) {
    return 0;
  }
  return v;
}

struct Acc {
  uint64_t count = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
  int64_t time = 0;
};

RooflineEntry Finish(std::string name, HostId host, const Acc& a,
                     const HostPeak* peak) {
  RooflineEntry e;
  e.name = std::move(name);
  e.host = host;
  e.count = a.count;
  e.flops = a.flops;
  e.bytes = a.bytes;
  e.time_ns = a.time;
  e.gflops = a.time > 0
                 ? static_cast<double>(a.flops) / static_cast<double>(a.time)
                 : 0;
  e.intensity =
      a.bytes > 0 ? static_cast<double>(a.flops) / static_cast<double>(a.bytes)
                  : 0;
  if (peak != nullptr && peak->peak_gflops > 0) {
    const double memory_roof = peak->peak_gbps > 0 && a.bytes > 0
                                   ? e.intensity * peak->peak_gbps
                                   : peak->peak_gflops;
    e.memory_bound = memory_roof < peak->peak_gflops;
    e.bound_gflops = std::min(peak->peak_gflops, memory_roof);
    e.fraction_of_bound = e.bound_gflops > 0 ? e.gflops / e.bound_gflops : 0;
  }
  return e;
}

void Add(int64_t flops, int64_t bytes, int64_t time, Acc* a) {
  ++a->count;
  a->flops = base::SaturatingAdd(a->flops, flops);
  a->bytes = base::SaturatingAdd(a->bytes, bytes);
  a->time = base::SaturatingAdd(a->time, time);
}

void Merge(const Acc& from, Acc* into) {
  into->count += from.count;
  into->flops = base::SaturatingAdd(into->flops, from.flops);
  into->bytes = base::SaturatingAdd(into->bytes, from.bytes);
  into->time = base::SaturatingAdd(into->time, from.time);
}

// The peaks each host's metadata records (the first process of a host that
// records any).
std::map<HostId, HostPeak> RecordedPeaks(const TraceStore& store) {
  std::map<HostId, HostPeak> peaks;
  for (const ProcessInfo& p : store.processes()) {
    const double gflops = Attribute(p, "machine.peak_gflops");
    const double gbps = Attribute(p, "machine.peak_gbps");
    if (gflops <= 0 && gbps <= 0) continue;
    if (peaks.count(p.host)) continue;
    HostPeak h;
    h.host = p.host;
    h.host_name = p.host_name;
    h.peak_gflops = h.recorded_gflops = gflops;
    h.peak_gbps = h.recorded_gbps = gbps;
    const auto& attrs = p.metadata.attributes();
    if (auto it = attrs.find("machine.peak_source"); it != attrs.end()) {
      h.source = it->second;
    }
    h.threads = static_cast<int64_t>(Attribute(p, "machine.peak_threads"));
    peaks[p.host] = h;
  }
  return peaks;
}

using ByText = std::map<std::pair<HostId, std::string>, Acc>;

// The device kernels' flops, bytes and time per host, by kernel name and
// by op kind. Summed by string id first (one lookup of two integers per
// kernel), then by name.
void SumKernels(const TraceStore& store, const pod::Keys& keys, ByText* by_name,
                ByText* by_kind) {
  constexpr StringId kNoKind = std::numeric_limits<StringId>::max();
  absl::flat_hash_map<std::pair<HostId, StringId>, Acc> by_name_id, by_kind_id;
  if (keys.flops || keys.bytes_accessed) {
    for (const TrackInfo& info : store.tracks()) {
      if (!pod::IsDevice(info)) continue;
      const HostId host = store.processes()[info.process].host;
      const TrackData& data = store.data(info.id);
      for (const trace_format::EventArgs& args : data.args) {
        if (args.kind != trace_format::EventKind::kSlice ||
            args.index >= data.slices.size()) {
          continue;
        }
        const auto flops = pod::IntArg(&args, keys.flops);
        const auto bytes = pod::IntArg(&args, keys.bytes_accessed);
        if (!flops && !bytes) continue;
        const int64_t f = pod::NonNegative(flops.value_or(0));
        const int64_t b = pod::NonNegative(bytes.value_or(0));
        const int64_t t = pod::NonNegative(data.slices.duration(args.index));
        Add(f, b, t, &by_name_id[{host, data.slices.name(args.index)}]);
        const trace_format::Arg* op = pod::FindArg(&args, keys.op);
        const auto* kind =
            op ? std::get_if<trace_format::StringId>(&op->value) : nullptr;
        Add(f, b, t, &by_kind_id[{host, kind ? kind->id : kNoKind}]);
      }
    }
  }
  for (const auto& [key, a] : by_name_id) {
    Merge(a, &(*by_name)[{key.first, std::string(store.str(key.second))}]);
  }
  for (const auto& [key, a] : by_kind_id) {
    Merge(a,
          &(*by_kind)[{key.first, key.second == kNoKind
                                      ? std::string("(unknown)")
                                      : std::string(store.str(key.second))}]);
  }
}

// A recorded peak below what a kernel name reached is understated: the
// best achieved rate replaces it.
void RaiseUnderstatedPeaks(const ByText& by_name,
                           std::map<HostId, HostPeak>* peaks) {
  for (const auto& [key, a] : by_name) {
    auto it = peaks->find(key.first);
    if (it == peaks->end() || a.time <= 0) continue;
    HostPeak& h = it->second;
    const double gflops =
        static_cast<double>(a.flops) / static_cast<double>(a.time);
    const double gbps =
        static_cast<double>(a.bytes) / static_cast<double>(a.time);
    if (h.peak_gflops > 0 && gflops > h.peak_gflops) {
      h.peak_gflops = gflops;
      h.understated = true;
    }
    if (h.peak_gbps > 0 && gbps > h.peak_gbps) {
      h.peak_gbps = gbps;
      h.understated = true;
    }
  }
}

// Each host's entries against its peaks, the longest first, the top ones.
void AppendEntries(const ByText& from, const std::map<HostId, HostPeak>& peaks,
                   const PodAnalysisOptions& options,
                   std::vector<RooflineEntry>* into) {
  std::map<HostId, std::vector<RooflineEntry>> per_host;
  for (const auto& [key, a] : from) {
    auto it = peaks.find(key.first);
    per_host[key.first].push_back(Finish(
        key.second, key.first, a, it == peaks.end() ? nullptr : &it->second));
  }
  for (auto& [host, v] : per_host) {
    std::sort(v.begin(), v.end(),
              [](const RooflineEntry& a, const RooflineEntry& b) {
                if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
                return a.name < b.name;
              });
    if (options.top > 0 && v.size() > options.top) v.resize(options.top);
    into->insert(into->end(), v.begin(), v.end());
  }
}

}  // namespace

OpProfile AnalyzeOps(const TraceStore& store,
                     const PodAnalysisOptions& options) {
  OpProfile out;
  std::map<HostId, HostPeak> peaks = RecordedPeaks(store);
  const pod::Keys keys(store);
  ByText by_name, by_kind;
  SumKernels(store, keys, &by_name, &by_kind);
  RaiseUnderstatedPeaks(by_name, &peaks);
  for (const auto& [host, h] : peaks) out.peaks.push_back(h);
  AppendEntries(by_name, peaks, options, &out.by_name);
  AppendEntries(by_kind, peaks, options, &out.by_kind);
  return out;
}

}  // namespace podscope::viewer
