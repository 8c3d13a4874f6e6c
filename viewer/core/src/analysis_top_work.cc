// Top work: self time by name per device and per host, with the share of
// step time, and each rank's communication/computation overlap
// (pod_analysis.h).
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis_pod_util.h"
#include "podscope/base/numeric.h"

namespace podscope::viewer {
namespace {

struct Acc {
  uint64_t count = 0;
  int64_t total = 0;
  int64_t self = 0;
};

}  // namespace

TopWork AnalyzeTopWork(const TraceStore& store, const StepBreakdown& steps,
                       const PodAnalysisOptions& options) {
  TopWork out;
  // (host, device id or -1, name) -> time.
  absl::flat_hash_map<std::tuple<HostId, int32_t, StringId>, Acc> acc;
  // One track's sums by name id, added to `acc` once per name and track.
  std::vector<Acc> by_name(store.string_count());
  std::vector<StringId> touched;
  for (const TrackInfo& info : store.tracks()) {
    const bool device = pod::IsDevice(info);
    if (!device && !pod::IsThread(info)) continue;
    const HostId host = store.processes()[info.process].host;
    const int32_t dev = device ? std::max<int32_t>(info.device_id, 0) : -1;
    const SliceColumns& s = store.data(info.id).slices;
    for (uint32_t d = 0; d < s.depth_count(); ++d) {
      s.ForEachSelfTime(
          s.depth_begin(d), s.depth_end(d), [&](uint32_t i, int64_t self) {
            const StringId name = s.name(i);
            if (name >= by_name.size()) by_name.resize(name + size_t{1});
            Acc& a = by_name[name];
            if (a.count == 0) touched.push_back(name);
            ++a.count;
            a.total =
                base::SaturatingAdd(a.total, pod::NonNegative(s.duration(i)));
            a.self = base::SaturatingAdd(a.self, pod::NonNegative(self));
          });
    }
    for (StringId name : touched) {
      Acc& from = by_name[name];
      Acc& into = acc[{host, dev, name}];
      into.count += from.count;
      into.total = base::SaturatingAdd(into.total, from.total);
      into.self = base::SaturatingAdd(into.self, from.self);
      from = Acc();
    }
    touched.clear();
  }
  // Step time per host: the ranks' summed steps.
  absl::flat_hash_map<HostId, int64_t> step_ns;
  for (size_t r = 0; r < steps.ranks.size() && r < steps.totals.size(); ++r) {
    int64_t& h = step_ns[steps.ranks[r].host];
    h = base::SaturatingAdd(h, steps.totals[r].total_ns);
  }
  std::map<std::pair<HostId, int32_t>, std::vector<WorkEntry>> groups;
  for (const auto& [key, a] : acc) {
    const auto& [host, dev, name] = key;
    WorkEntry e;
    e.name = std::string(store.str(name));
    e.host = host;
    e.host_name = host < store.hosts().size() ? store.hosts()[host].name : "";
    e.device_id = dev;
    e.count = a.count;
    e.total_ns = a.total;
    e.self_ns = a.self;
    const int64_t st = step_ns[host];
    e.step_share =
        st > 0 ? static_cast<double>(a.self) / static_cast<double>(st) : 0;
    groups[{host, dev}].push_back(std::move(e));
  }
  for (auto& [key, entries] : groups) {
    std::sort(entries.begin(), entries.end(),
              [](const WorkEntry& a, const WorkEntry& b) {
                if (a.self_ns != b.self_ns) return a.self_ns > b.self_ns;
                return a.name < b.name;
              });
    if (options.top > 0 && entries.size() > options.top) {
      entries.resize(options.top);
    }
    auto& into = key.second < 0 ? out.host_scopes : out.device_ops;
    into.insert(into.end(), entries.begin(), entries.end());
  }

  const pod::Keys keys(store);
  for (size_t r = 0; r < steps.ranks.size(); ++r) {
    // The overlap needs only the device work.
    pod::RankIntervals iv = pod::CollectRankIntervals(
        store, steps.ranks[r].process, keys, {}, /*with_threads=*/false);
    std::vector<pod::Interval> coll =
        iv.of[static_cast<int>(StepCategory::kCollectiveTransfer)];
    const auto& w = iv.of[static_cast<int>(StepCategory::kCollectiveWait)];
    coll.insert(coll.end(), w.begin(), w.end());
    const std::vector<pod::Interval> cu = pod::Union(std::move(coll));
    const std::vector<pod::Interval> compute =
        pod::Union(std::move(iv.of[static_cast<int>(StepCategory::kCompute)]));
    RankOverlap o;
    o.rank = static_cast<int>(r);
    o.collective_ns = pod::Length(cu);
    o.overlapped_ns = pod::Overlap(cu, compute);
    out.overlap.push_back(o);
  }
  return out;
}

}  // namespace podscope::viewer
