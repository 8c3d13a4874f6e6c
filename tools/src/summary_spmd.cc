// `podscope summary`'s SPMD section: the collectives the runtime's SPMD
// partitioner inserted, read from its "spmd_collective" slices (args kind,
// reason, bytes, min_bytes).

#include <algorithm>

#include "summary.h"

namespace podscope::tools {

void AddSpmdCollectives(const trace_format::TraceReader& reader,
                        const trace_format::TrackEvents& e,
                        std::vector<SpmdCollectiveSummary>* rows) {
  uint32_t name = 0;
  for (const trace_format::Slice& s : e.slices) {
    if (reader.GetString(s.name) == "spmd_collective") {
      name = s.name;
      break;
    }
  }
  if (name == 0) return;
  for (const trace_format::EventArgs& args : e.args) {
    if (args.kind != trace_format::EventKind::kSlice ||
        args.index >= e.slices.size() || e.slices[args.index].name != name) {
      continue;
    }
    SpmdCollectiveSummary row;
    for (const trace_format::Arg& arg : args.args) {
      const std::string_view key = reader.GetString(arg.key);
      if (const auto* text = std::get_if<trace_format::StringId>(&arg.value)) {
        const std::string_view v = reader.GetString(text->id);
        if (key == "kind") row.kind = v;
        if (key == "reason") row.reason = v;
      } else if (const auto* n = std::get_if<int64_t>(&arg.value)) {
        if (key == "bytes") row.bytes = *n;
        if (key == "min_bytes") row.min_bytes = *n;
      }
    }
    auto it = std::find_if(rows->begin(), rows->end(), [&](const auto& r) {
      return r.reason == row.reason && r.kind == row.kind;
    });
    if (it == rows->end()) {
      rows->push_back(row);
      it = rows->end() - 1;
    }
    ++it->count;
    it->total_ns += e.slices[args.index].duration_ns;
  }
}

}  // namespace podscope::tools
