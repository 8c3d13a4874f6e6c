// The collectives of an XSpace, for lining hosts up (host_alignment.h).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "podscope/trace_format/xspace.h"

namespace podscope::trace_format {
namespace {

namespace xp = ::tensorflow::profiler;

// XLA's collective ops, as HLO names them (`all-reduce.3`, `%all-gather`,
// `all-reduce-done.1`); an async op's start does not end with the others.
bool IsCollective(std::string_view name) {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  for (std::string_view op : {"all-reduce", "all-gather", "reduce-scatter",
                              "collective-permute", "all-to-all"}) {
    if (name.starts_with(op)) {
      return name.substr(op.size()).find("-start") == std::string_view::npos;
    }
  }
  return false;
}

// The step an event belongs to, as XProf marks it (group_id on device
// events, step_num on host steps), in its own stats or its metadata's;
// -1 when unmarked.
int64_t StepOf(const xp::XPlane& plane, const xp::XEvent& e) {
  auto value = [&](const xp::XStat& s) -> std::optional<int64_t> {
    auto it = plane.stat_metadata().find(s.metadata_id());
    if (it == plane.stat_metadata().end()) return std::nullopt;
    const std::string& n = it->second.name();
    if (n != "group_id" && n != "step_num") return std::nullopt;
    if (s.value_case() == xp::XStat::kInt64Value) return s.int64_value();
    if (s.value_case() == xp::XStat::kUint64Value) {
      return static_cast<int64_t>(s.uint64_value());
    }
    return std::nullopt;
  };
  for (const xp::XStat& s : e.stats()) {
    if (auto v = value(s)) return *v;
  }
  auto m = plane.event_metadata().find(e.metadata_id());
  if (m != plane.event_metadata().end()) {
    for (const xp::XStat& s : m->second.stats()) {
      if (auto v = value(s)) return *v;
    }
  }
  return -1;
}

// The `collective_id` a Podscope collective carries (in an XSpace that a
// Podscope process wrote), when the event has one of at most 256 bytes.
std::optional<std::string> CollectiveIdOf(const xp::XPlane& plane,
                                          const xp::XEvent& e) {
  for (const xp::XStat& s : e.stats()) {
    auto it = plane.stat_metadata().find(s.metadata_id());
    if (it == plane.stat_metadata().end() ||
        it->second.name() != "collective_id") {
      continue;
    }
    std::string id;
    switch (s.value_case()) {
      case xp::XStat::kStrValue:
        id = s.str_value();
        break;
      case xp::XStat::kInt64Value:
        id = absl::StrCat(s.int64_value());
        break;
      case xp::XStat::kUint64Value:
        id = absl::StrCat(s.uint64_value());
        break;
      case xp::XStat::kRefValue: {
        auto ref =
            plane.stat_metadata().find(static_cast<int64_t>(s.ref_value()));
        if (ref != plane.stat_metadata().end()) id = ref->second.name();
        break;
      }
      default:
        break;
    }
    if (id.empty() || id.size() > 256) return std::nullopt;
    return id;
  }
  return std::nullopt;
}

// Times outside any real epoch clock (a hostile or broken answer: before
// 1970, after 2116) are left out of alignment rather than overflowing it.
constexpr __int128 kMaxSaneNs = static_cast<__int128>(1) << 62;

}  // namespace

XSpaceCollectives CollectivesOfXSpace(const xp::XSpace& space) {
  XSpaceCollectives out;
  __int128 first = kMaxSaneNs, last = -kMaxSaneNs;
  absl::flat_hash_map<std::string, int64_t> ends;
  for (const xp::XPlane& plane : space.planes()) {
    for (const xp::XLine& line : plane.lines()) {
      // The n-th run of one op in one step, per line (a device stream).
      absl::flat_hash_map<std::string, int> ordinal;
      for (const xp::XEvent& e : line.events()) {
        ++out.events;
        const __int128 start =
            static_cast<__int128>(line.timestamp_ns()) + e.offset_ps() / 1000;
        const __int128 end =
            start + std::max<int64_t>(e.duration_ps(), 0) / 1000;
        if (start < 0 || end >= kMaxSaneNs) continue;
        first = std::min(first, start);
        last = std::max(last, end);
        std::string key;
        if (std::optional<std::string> id = CollectiveIdOf(plane, e)) {
          // One collective of a Podscope communicator: its id names it on
          // every participant.
          key = "id/" + *id;
        } else {
          auto m = plane.event_metadata().find(e.metadata_id());
          if (m == plane.event_metadata().end()) continue;
          const std::string& name = m->second.name();
          if (!IsCollective(name)) continue;
          key = absl::StrCat(StepOf(plane, e), "/", name);
          const int n = ordinal[key]++;
          absl::StrAppend(&key, "/", n);
        }
        // The same collective on several devices of the host: the last
        // to end, when the host's part is done.
        auto [it, fresh] = ends.emplace(key, static_cast<int64_t>(end));
        if (!fresh) {
          it->second = std::max(it->second, static_cast<int64_t>(end));
        }
      }
    }
  }
  if (first <= last) {
    out.has_span = true;
    out.first_ns = static_cast<int64_t>(first);
    out.last_ns = static_cast<int64_t>(last);
  }
  out.ends.assign(ends.begin(), ends.end());
  return out;
}

}  // namespace podscope::trace_format
