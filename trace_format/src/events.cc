#include <algorithm>

#include "podscope/trace_format/events.h"

namespace podscope::trace_format {

const EventArgs* TrackEvents::FindArgs(EventKind kind, uint32_t index) const {
  auto it = std::lower_bound(
      args.begin(), args.end(), std::make_pair(kind, index),
      [](const EventArgs& a, const std::pair<EventKind, uint32_t>& key) {
        return std::make_pair(a.kind, a.index) < key;
      });
  if (it == args.end() || it->kind != kind || it->index != index) {
    return nullptr;
  }
  return &*it;
}

}  // namespace podscope::trace_format
