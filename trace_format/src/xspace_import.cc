// XSpace -> podtrace. A Podscope-written XSpace is restored from its plane
// info (same tracks, metadata, clocks, samples); any other XSpace is mapped
// by XProf's conventions: "/host:CPU" lines become thread tracks,
// "/device:<KIND>:<n>" planes devices with a stream track per line, other
// planes' lines thread tracks named after their plane.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podscope/trace_format/xspace.h"
#include "podscope/trace_format/xspace_extras.pb.h"
#include "xspace_names.h"

namespace podscope::trace_format {
namespace xp = ::tensorflow::profiler;

namespace {

int64_t Clamp(__int128 v) {
  if (v > std::numeric_limits<int64_t>::max()) {
    return std::numeric_limits<int64_t>::max();
  }
  if (v < std::numeric_limits<int64_t>::min()) {
    return std::numeric_limits<int64_t>::min();
  }
  return static_cast<int64_t>(v);
}

__int128 FloorDiv1000(__int128 ps) {
  __int128 q = ps / 1000;
  if (ps % 1000 < 0) --q;
  return q;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// One plane's dictionaries.
struct PlaneView {
  const xp::XPlane* plane = nullptr;
  absl::flat_hash_map<int64_t, const xp::XStatMetadata*> stats;
  bool podscope_info = false;
  proto::XSpacePlaneInfo info;

  explicit PlaneView(const xp::XPlane& p) : plane(&p) {
    for (const auto& [id, m] : p.stat_metadata()) stats[id] = &m;
    for (const xp::XStat& s : p.stats()) {
      if (StatName(s) == kPlaneInfoStat &&
          s.value_case() == xp::XStat::kBytesValue) {
        podscope_info = info.ParseFromString(s.bytes_value());
      }
    }
  }

  std::string_view StatName(const xp::XStat& s) const {
    auto it = stats.find(s.metadata_id());
    return it == stats.end() ? std::string_view() : it->second->name();
  }
  bool Derived(const xp::XStat& s) const {
    auto it = stats.find(s.metadata_id());
    return it != stats.end() &&
           it->second->description() == kDerivedDescription;
  }
  const xp::XEventMetadata* Event(int64_t id) const {
    auto it = plane->event_metadata().find(id);
    return it == plane->event_metadata().end() ? nullptr : &it->second;
  }
};

class Importer {
 public:
  Importer(const xp::XSpace& space, const XSpaceImportFacts& facts,
           TraceWriter& writer)
      : space_(space), facts_(facts), w_(writer) {}

  XSpaceImportStats Run() {
    planes_.reserve(space_.planes_size());
    bool podscope = false;
    for (const xp::XPlane& p : space_.planes()) {
      planes_.emplace_back(p);
      podscope |= planes_.back().podscope_info;
    }
    if (podscope) {
      RunPodscope();
    } else {
      RunForeign();
    }
    return stats_;
  }

 private:
  // ------------------------------------------------------------ shared
  std::string EventName(const PlaneView& pv, const xp::XEvent& e) {
    if (const xp::XEventMetadata* m = pv.Event(e.metadata_id())) {
      if (!m->name().empty()) return m->name();
      if (!m->display_name().empty()) return m->display_name();
    }
    return absl::StrCat("event#", e.metadata_id());
  }

  void AddStat(const PlaneView& pv, const xp::XStat& s, bool podscope,
               std::vector<Arg>* args) {
    std::string_view name = pv.StatName(s);
    if (podscope && (StartsWith(name, kInternalStatPrefix) || pv.Derived(s))) {
      return;
    }
    if (!podscope && name == kPlaneInfoStat) return;
    const std::string key = name.empty()
                                ? absl::StrCat("stat#", s.metadata_id())
                                : std::string(name);
    Arg arg;
    arg.key = w_.InternString(key);
    switch (s.value_case()) {
      case xp::XStat::kDoubleValue:
        arg.value = s.double_value();
        break;
      case xp::XStat::kUint64Value:
        if (s.uint64_value() <= uint64_t{std::numeric_limits<int64_t>::max()}) {
          arg.value = static_cast<int64_t>(s.uint64_value());
        } else {
          arg.value = StringId{w_.InternString(absl::StrCat(s.uint64_value()))};
        }
        break;
      case xp::XStat::kInt64Value:
        arg.value = s.int64_value();
        break;
      case xp::XStat::kStrValue:
        arg.value = StringId{w_.InternString(s.str_value())};
        break;
      case xp::XStat::kBytesValue:
        arg.value = StringId{w_.InternString(
            absl::StrCat("<", s.bytes_value().size(), " bytes>"))};
        break;
      case xp::XStat::kRefValue: {
        auto it = pv.stats.find(static_cast<int64_t>(s.ref_value()));
        arg.value = StringId{w_.InternString(
            it == pv.stats.end() ? absl::StrCat("ref#", s.ref_value())
                                 : it->second->name())};
        break;
      }
      case xp::XStat::VALUE_NOT_SET:
        return;
    }
    args->push_back(arg);
  }

  // The event's arguments: its metadata's stats, then its own.
  std::vector<Arg> Args(const PlaneView& pv, const xp::XEvent& e,
                        bool podscope) {
    std::vector<Arg> args;
    if (const xp::XEventMetadata* m = pv.Event(e.metadata_id())) {
      for (const xp::XStat& s : m->stats()) AddStat(pv, s, podscope, &args);
    }
    for (const xp::XStat& s : e.stats()) AddStat(pv, s, podscope, &args);
    return args;
  }

  // Start and duration in ns on the line's clock, minus `delta`; the end is
  // rounded like the start so that nested events stay nested.
  std::pair<int64_t, int64_t> Times(const xp::XLine& line, const xp::XEvent& e,
                                    int64_t delta) {
    const __int128 base = static_cast<__int128>(line.timestamp_ns()) - delta;
    const __int128 off = e.offset_ps();
    const __int128 dur = std::max<int64_t>(e.duration_ps(), 0);
    const int64_t start = Clamp(base + FloorDiv1000(off));
    const int64_t end = Clamp(base + FloorDiv1000(off + dur));
    return {start, end - start};
  }

  // --------------------------------------------------------- podscope
  void RunPodscope() {
    const proto::XSpacePlaneInfo* first = nullptr;
    std::vector<const proto::XSpaceLine*> lines;
    for (const PlaneView& pv : planes_) {
      if (!pv.podscope_info) continue;
      if (first == nullptr && pv.info.has_metadata()) first = &pv.info;
      for (const auto& l : pv.info.lines()) {
        if (l.content() == proto::XSpaceLine::EVENTS) lines.push_back(&l);
      }
    }
    std::sort(lines.begin(), lines.end(), [](const auto* a, const auto* b) {
      return a->track().id() < b->track().id();
    });
    std::map<uint32_t, uint32_t> track_ids;
    for (const proto::XSpaceLine* l : lines) {
      const uint32_t id = w_.AddTrack(l->track());
      track_ids[l->track().id()] = id;
      if (l->dropped_events() > 0) w_.SetDropCount(id, l->dropped_events());
    }
    stats_.tracks = lines.size();
    if (first != nullptr) {
      proto::Metadata m = first->metadata();
      for (proto::Device& d : *m.mutable_devices()) {
        auto old = d.stream_track_ids();
        d.clear_stream_track_ids();
        for (uint32_t t : old) {
          if (auto it = track_ids.find(t); it != track_ids.end()) {
            d.add_stream_track_ids(it->second);
          }
        }
      }
      stats_.host = m.host();
      stats_.pid = m.pid();
      w_.SetMetadata(m);
      for (const auto& s : first->clock().snapshots()) {
        w_.AddClockSnapshot(s.monotonic_ns(), s.realtime_ns());
      }
      for (const auto& o : first->clock().offsets()) w_.AddClockOffset(o);
    }
    for (const PlaneView& pv : planes_) {
      if (!pv.podscope_info) continue;
      std::map<uint32_t, uint32_t> stacks = AddStacks(pv.info);
      absl::flat_hash_map<int64_t, const proto::XSpaceLine*> by_line;
      for (const auto& l : pv.info.lines()) by_line[l.line_id()] = &l;
      const int64_t delta = pv.info.realtime_minus_monotonic_ns();
      for (const xp::XLine& line : pv.plane->lines()) {
        if (IsStepsLineId(line.id())) continue;  // derived for XProf
        auto it = by_line.find(line.id());
        if (it == by_line.end()) continue;
        const proto::XSpaceLine& l = *it->second;
        auto track = track_ids.find(l.track().id());
        if (track == track_ids.end()) continue;
        if (l.content() == proto::XSpaceLine::SAMPLES) {
          for (const xp::XEvent& e : line.events()) {
            uint64_t stack = 0;
            for (const xp::XStat& s : e.stats()) {
              if (pv.StatName(s) == kStackStat) stack = s.uint64_value();
            }
            auto st = stacks.find(static_cast<uint32_t>(stack));
            w_.AddSample(track->second, Times(line, e, delta).first,
                         st == stacks.end() ? 0 : st->second);
            ++stats_.events;
          }
        } else if (l.track().kind() == proto::TRACK_KIND_COUNTER) {
          for (const xp::XEvent& e : line.events()) {
            double value = 0;
            for (const xp::XStat& s : e.stats()) {
              if (pv.StatName(s) == kCounterValueStat) value = s.double_value();
            }
            w_.AddCounter(track->second, Times(line, e, delta).first, value);
            ++stats_.events;
          }
        } else {
          AddEvents(pv, line, track->second, delta, /*podscope=*/true);
        }
      }
    }
  }

  std::map<uint32_t, uint32_t> AddStacks(const proto::XSpacePlaneInfo& info) {
    std::vector<uint32_t> frames;
    for (const proto::XSpaceFrame& f : info.frames()) {
      proto::Frame frame;
      frame.set_function_name(w_.InternString(f.function_name()));
      frame.set_module_name(w_.InternString(f.module_name()));
      frame.set_module_offset(f.module_offset());
      if (!f.file_name().empty()) {
        frame.set_file_name(w_.InternString(f.file_name()));
      }
      frame.set_line(f.line());
      frames.push_back(w_.AddFrame(frame));
    }
    std::map<uint32_t, uint32_t> stacks;
    for (const proto::XSpaceStack& s : info.stacks()) {
      std::vector<uint32_t> ids;
      for (uint32_t i : s.frames()) {
        if (i < frames.size()) ids.push_back(frames[i]);
      }
      stacks[s.id()] = w_.AddStack(ids);
    }
    return stacks;
  }

  void AddFlows(const PlaneView& pv, const xp::XEvent& e, const EventRef& ref) {
    for (const xp::XStat& s : e.stats()) {
      if (pv.StatName(s) != kFlowsStat) continue;
      auto it = pv.stats.find(static_cast<int64_t>(s.ref_value()));
      if (it == pv.stats.end()) continue;
      std::string_view text = it->second->name();
      while (!text.empty()) {
        const size_t comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        const size_t colon = item.find(':');
        if (colon != std::string_view::npos) {
          uint64_t id = 0;
          int phase = 0;
          for (char c : item.substr(0, colon)) {
            if (std::isdigit(static_cast<unsigned char>(c)))
              id = id * 10 + (c - '0');
          }
          if (colon + 1 < item.size()) phase = item[colon + 1] - '0';
          if (phase >= 0 && phase <= 2) {
            w_.AddFlow(ref, id, static_cast<FlowPhase>(phase));
          }
        }
        if (comma == std::string_view::npos) break;
        text.remove_prefix(comma + 1);
      }
    }
  }

  bool IsInstant(const PlaneView& pv, const xp::XEvent& e) {
    if (const xp::XEventMetadata* m = pv.Event(e.metadata_id())) {
      for (const xp::XStat& s : m->stats()) {
        if (pv.StatName(s) == kInstantStat) return true;
      }
    }
    return false;
  }

  void AddEvents(const PlaneView& pv, const xp::XLine& line, uint32_t track,
                 int64_t delta, bool podscope) {
    for (const xp::XEvent& e : line.events()) {
      const uint32_t name = w_.InternString(EventName(pv, e));
      std::vector<Arg> args = Args(pv, e, podscope);
      ++stats_.events;
      if (e.data_case() == xp::XEvent::kNumOccurrences) {
        // Aggregated: no start of its own; shown at the line's start.
        args.push_back(
            {w_.InternString("num_occurrences"), e.num_occurrences()});
        args.push_back({w_.InternString("duration_ps"), e.duration_ps()});
        w_.AddInstant(track,
                      Clamp(static_cast<__int128>(line.timestamp_ns()) - delta),
                      name, args);
        continue;
      }
      const auto [start, duration] = Times(line, e, delta);
      if (podscope && IsInstant(pv, e)) {
        AddFlows(pv, e, w_.AddInstant(track, start, name, args));
      } else {
        const EventRef ref = w_.AddSlice(track, start, duration, name, args);
        if (podscope) AddFlows(pv, e, ref);
      }
    }
  }

  // ---------------------------------------------------------- foreign
  void RunForeign() {
    proto::Metadata m = ForeignMetadata();
    int64_t t0 = std::numeric_limits<int64_t>::max();
    std::map<std::pair<std::string, int32_t>, int> device_of_plane;
    int32_t next_device = 0;
    for (const PlaneView& pv : planes_) {
      const xp::XPlane& p = *pv.plane;
      AddPlaneStats(pv, &m);
      if (p.lines().empty()) continue;
      proto::Device* device = nullptr;
      if (StartsWith(p.name(), kDevicePlanePrefix)) {
        device = AddForeignDevice(pv, &m, &device_of_plane, &next_device);
      }
      std::map<int64_t, uint32_t> line_tracks;  // same id, same timeline
      for (const xp::XLine& line : p.lines()) {
        uint32_t& track = line_tracks[line.id()];
        if (track == 0) {
          track = AddForeignTrack(pv, line, device,
                                  static_cast<int32_t>(line_tracks.size()));
        }
        if (!line.events().empty()) t0 = std::min(t0, line.timestamp_ns());
        AddEvents(pv, line, track, 0, /*podscope=*/false);
      }
    }
    if (t0 == std::numeric_limits<int64_t>::max()) t0 = 0;
    m.set_start_monotonic_ns(t0);
    m.set_start_realtime_ns(t0);
    w_.SetMetadata(m);
    // XSpace times are each host's Unix epoch clock: hosts line up through
    // it, as XProf lines them up.
    w_.AddClockSnapshot(t0, t0);
    if (!facts_.clock.empty()) {
      for (const proto::ClockOffset& o : facts_.clock) w_.AddClockOffset(o);
      return;
    }
    proto::ClockOffset offset;
    offset.set_local_monotonic_ns(t0);
    offset.set_offset_ns(0);
    offset.set_reference("realtime (XSpace)");
    w_.AddClockOffset(offset);
  }

  // The file's metadata: the space's first host name, the import's facts,
  // and the space's errors and warnings as attributes.
  proto::Metadata ForeignMetadata() {
    proto::Metadata m;
    const std::string host =
        !space_.hostnames().empty() && !space_.hostnames(0).empty()
            ? space_.hostnames(0)
            : facts_.host;
    m.set_host(host);
    m.set_pid(0);
    m.set_process_index(facts_.process_index);
    m.set_process_count(facts_.process_count);
    m.set_session_id(facts_.session);
    m.add_command_line(facts_.source);
    m.set_producer("podscope 0.1.0 (imported from XSpace)");
    (*m.mutable_attributes())["source_format"] = "XSpace";
    (*m.mutable_attributes())["source_file"] = facts_.source;
    for (int i = 0; i < space_.errors_size(); ++i) {
      (*m.mutable_attributes())[absl::StrCat("xspace_error_", i)] =
          space_.errors(i);
    }
    for (int i = 0; i < space_.warnings_size(); ++i) {
      (*m.mutable_attributes())[absl::StrCat("xspace_warning_", i)] =
          space_.warnings(i);
    }
    for (const auto& [key, value] : facts_.attributes) {
      (*m.mutable_attributes())[key] = value;
    }
    stats_.host = host;
    return m;
  }

  // A plane's own stats become attributes "<plane> <stat>".
  static void AddPlaneStats(const PlaneView& pv, proto::Metadata* m) {
    const xp::XPlane& p = *pv.plane;
    for (const xp::XStat& s : p.stats()) {
      std::string value;
      if (s.value_case() == xp::XStat::kInt64Value)
        value = absl::StrCat(s.int64_value());
      if (s.value_case() == xp::XStat::kUint64Value)
        value = absl::StrCat(s.uint64_value());
      if (s.value_case() == xp::XStat::kDoubleValue)
        value = absl::StrCat(s.double_value());
      if (s.value_case() == xp::XStat::kStrValue) value = s.str_value();
      if (!value.empty()) {
        (*m->mutable_attributes())[absl::StrCat(
            p.name(), " ", std::string(pv.StatName(s)))] = value;
      }
    }
  }

  // A device plane's device: its kind and ordinal from the plane's name, a
  // global id unique in the file.
  proto::Device* AddForeignDevice(
      const PlaneView& pv, proto::Metadata* mp,
      std::map<std::pair<std::string, int32_t>, int>* device_of_plane_p,
      int32_t* next_device_p) {
    const xp::XPlane& p = *pv.plane;
    proto::Metadata& m = *mp;
    auto& device_of_plane = *device_of_plane_p;
    int32_t& next_device = *next_device_p;
    proto::Device* device = nullptr;
    // "/device:GPU:0" -> kind GPU, ordinal 0.
    std::string_view rest =
        std::string_view(p.name()).substr(kDevicePlanePrefix.size());
    const size_t colon = rest.find(':');
    std::string kind(rest.substr(0, colon));
    if (kind == kCustomKind) {
      // Podscope writes every device other than GPU and TPU as a custom
      // plane with its real kind in a stat.
      for (const xp::XStat& s : p.stats()) {
        if (pv.StatName(s) == kDeviceTypeStat &&
            s.value_case() == xp::XStat::kStrValue && !s.str_value().empty()) {
          kind = s.str_value();
        }
      }
    }
    int32_t ordinal = -1;
    if (colon != std::string_view::npos) {
      int32_t n = 0;
      size_t i = colon + 1;
      for (; i < rest.size() &&
             std::isdigit(static_cast<unsigned char>(rest[i])) && n < 1000000;
           ++i) {
        n = n * 10 + (rest[i] - '0');
      }
      if (i > colon + 1 && i == rest.size()) ordinal = n;
    }
    device = m.add_devices();
    int32_t id =
        ordinal >= 0 && !device_of_plane.count({kind, ordinal}) ? ordinal : -1;
    for (const auto& d : m.devices()) {
      if (&d != device && d.global_id() == id) id = -1;
    }
    if (id < 0) id = std::max(next_device, 1000);
    device_of_plane[{kind, id}] = 1;
    next_device = std::max(next_device, id + 1);
    device->set_global_id(id);
    device->set_local_hardware_id(ordinal >= 0 ? ordinal : id);
    device->set_process_index(facts_.process_index);
    device->set_kind(kind);
    std::string platform = kind;
    for (char& c : platform) c = static_cast<char>(std::tolower(c));
    device->set_platform(platform);
    return device;
  }

  // The track of a line: a device stream on a device plane, else a thread.
  uint32_t AddForeignTrack(const PlaneView& pv, const xp::XLine& line,
                           proto::Device* device, int32_t sort_index) {
    const xp::XPlane& p = *pv.plane;
    const bool is_host = p.name() == kHostPlaneName;
    proto::Track t;
    const std::string& line_name =
        !line.display_name().empty() ? line.display_name() : line.name();
    std::string name =
        line_name.empty() ? absl::StrCat("line ", line.id()) : line_name;
    if (device != nullptr) {
      t.set_kind(proto::TRACK_KIND_DEVICE_STREAM);
      t.set_device_id(device->global_id());
      if (IsStepsLineId(line.id())) {
        // XProf's step markers, whichever id form they came with.
        if (line_name.empty()) name = std::string(kStepsLineName);
        t.set_stream_id(static_cast<int32_t>(kStepsLineId));
      } else {
        t.set_stream_id(static_cast<int32_t>(line.id()));
      }
    } else {
      t.set_kind(proto::TRACK_KIND_THREAD);
      t.set_tid(line.id());
      if (!is_host) name = absl::StrCat(p.name(), ": ", name);
    }
    t.set_name(name);
    t.set_sort_index(sort_index);
    const uint32_t track = w_.AddTrack(t);
    if (device != nullptr) device->add_stream_track_ids(track);
    ++stats_.tracks;
    return track;
  }

  const xp::XSpace& space_;
  const XSpaceImportFacts& facts_;
  TraceWriter& w_;
  std::vector<PlaneView> planes_;
  XSpaceImportStats stats_;
};

}  // namespace

absl::StatusOr<XSpaceImportStats> XSpaceToPodtrace(
    std::string_view data, const XSpaceImportFacts& facts,
    TraceWriter& writer) {
  xp::XSpace space;
  if (data.size() > std::numeric_limits<int>::max() ||
      !space.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return absl::DataLossError(absl::StrCat(
        facts.source,
        ": not a valid XSpace (the protobuf is damaged or truncated)"));
  }
  return XSpaceToPodtrace(space, facts, writer);
}

absl::StatusOr<XSpaceImportStats> XSpaceToPodtrace(
    const xp::XSpace& space, const XSpaceImportFacts& facts,
    TraceWriter& writer) {
  if (space.planes().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(facts.source, ": the XSpace holds no planes"));
  }
  Importer importer(space, facts, writer);
  return importer.Run();
}

}  // namespace podscope::trace_format
