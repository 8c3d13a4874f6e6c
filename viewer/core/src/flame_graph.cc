#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "name_match.h"
#include "podscope/viewer/analysis.h"

namespace podscope::viewer {

FlameGraph BuildFlameGraph(const TraceStore& store, int64_t t0, int64_t t1,
                           const std::vector<TrackId>& tracks) {
  // Count each distinct stack once, then walk it once.
  absl::flat_hash_map<std::pair<ProcessId, uint32_t>, uint64_t> stacks;
  for (TrackId t : internal::TracksOrAll(store, tracks)) {
    const SampleColumns& s = store.data(t).samples;
    const ProcessId p = store.tracks()[t].process;
    for (size_t i =
             std::lower_bound(s.ts.begin(), s.ts.end(), t0) - s.ts.begin();
         i < s.ts.size() && s.ts[i] < t1; ++i) {
      ++stacks[{p, s.stacks[i]}];
    }
  }
  FlameGraph g;
  g.nodes.emplace_back();
  absl::flat_hash_map<std::pair<uint32_t, StringId>, uint32_t> child_of;
  static const std::vector<StringId> kNoFrames;
  for (const auto& [key, count] : stacks) {
    const auto& by_id = store.processes()[key.first].stacks;
    auto it = by_id.find(key.second);
    const std::vector<StringId>& frames =
        it == by_id.end() ? kNoFrames : it->second;
    g.samples += count;
    g.nodes[0].total += count;
    uint32_t node = 0;
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
      auto [c, added] = child_of.try_emplace(
          {node, *f}, static_cast<uint32_t>(g.nodes.size()));
      if (added) {
        FlameNode n;
        n.name = *f;
        n.parent = node;
        g.nodes.push_back(n);
        g.nodes[node].children.push_back(c->second);
      }
      node = c->second;
      g.nodes[node].total += count;
    }
    g.nodes[node].self += count;
  }
  for (FlameNode& n : g.nodes) {
    std::sort(n.children.begin(), n.children.end(),
              [&](uint32_t a, uint32_t b) {
                if (g.nodes[a].total != g.nodes[b].total) {
                  return g.nodes[a].total > g.nodes[b].total;
                }
                return store.str(g.nodes[a].name) < store.str(g.nodes[b].name);
              });
  }
  return g;
}

}  // namespace podscope::viewer
