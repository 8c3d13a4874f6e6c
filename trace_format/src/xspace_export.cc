// Podtrace -> XSpace: planes per host and device, a line per track, stats
// per argument, XProf's step conventions, and the plane info that lets an
// import restore the trace exactly.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/numeric.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/xspace.h"
#include "podscope/trace_format/xspace_extras.pb.h"
#include "xspace_names.h"

namespace podscope::trace_format {
namespace fs = std::filesystem;
namespace xp = ::tensorflow::profiler;

namespace {

// ns -> ps without overflowing: saturates at the ends of int64.
int64_t ToPs(int64_t ns) {
  int64_t ps;
  if (__builtin_mul_overflow(ns, int64_t{1000}, &ps)) {
    return ns < 0 ? std::numeric_limits<int64_t>::min()
                  : std::numeric_limits<int64_t>::max();
  }
  return ps;
}

using base::SaturatingAdd;
using base::SaturatingSub;

// The offset that turns a file's monotonic times into Unix epoch times.
int64_t RealtimeMinusMonotonic(const TraceReader& reader) {
  const auto& snapshots = reader.clock().snapshots();
  if (!snapshots.empty()) {
    return SaturatingSub(snapshots[0].realtime_ns(),
                         snapshots[0].monotonic_ns());
  }
  const proto::Metadata& m = reader.metadata();
  if (m.start_realtime_ns() != 0) {
    return SaturatingSub(m.start_realtime_ns(), m.start_monotonic_ns());
  }
  return 0;
}

// Builds one plane: interned event and stat metadata.
class PlaneBuilder {
 public:
  explicit PlaneBuilder(xp::XPlane* plane) : plane_(plane) {}

  int64_t EventMetadata(std::string_view name_view, bool instant) {
    const std::string name(name_view);
    auto& ids = instant ? instant_ids_ : slice_ids_;
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    const int64_t id = static_cast<int64_t>(plane_->event_metadata_size()) + 1;
    xp::XEventMetadata& m = (*plane_->mutable_event_metadata())[id];
    m.set_id(id);
    m.set_name(name);
    if (instant) {
      xp::XStat* s = m.add_stats();
      s->set_metadata_id(StatMetadata(kInstantStat, /*derived=*/false));
      s->set_int64_value(1);
    }
    ids.emplace(name, id);
    return id;
  }

  // Stat names are unique in a plane; a string used as a ref_value shares
  // the table.
  int64_t StatMetadata(std::string_view name_view, bool derived) {
    const std::string name(name_view);
    auto it = stat_ids_.find(name);
    if (it != stat_ids_.end()) return it->second;
    const int64_t id = static_cast<int64_t>(plane_->stat_metadata_size()) + 1;
    xp::XStatMetadata& m = (*plane_->mutable_stat_metadata())[id];
    m.set_id(id);
    m.set_name(name);
    if (derived) m.set_description(std::string(kDerivedDescription));
    stat_ids_.emplace(name, id);
    return id;
  }

  void AddArg(const TraceReader& reader, const Arg& arg, xp::XEvent* e) {
    xp::XStat* s = e->add_stats();
    s->set_metadata_id(StatMetadata(reader.GetString(arg.key), false));
    if (const auto* i = std::get_if<int64_t>(&arg.value)) {
      s->set_int64_value(*i);
    } else if (const auto* d = std::get_if<double>(&arg.value)) {
      s->set_double_value(*d);
    } else {
      const StringId id = std::get<StringId>(arg.value);
      s->set_ref_value(
          static_cast<uint64_t>(StatMetadata(reader.GetString(id.id), false)));
    }
  }

  xp::XPlane* plane() { return plane_; }

 private:
  xp::XPlane* plane_;
  absl::flat_hash_map<std::string, int64_t> slice_ids_, instant_ids_, stat_ids_;
};

struct StepSpan {
  int64_t start_ns, end_ns, step_num, group_id;
};

// Host steps as the viewer's step table finds them: outermost slices whose
// name contains "step" on thread tracks.
bool IsStepName(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return lower.find("step") != std::string::npos;
}

// The kind in a device plane's name: XProf's trace viewer shows GPU planes,
// else TPU planes, else custom planes, so every other kind is custom.
std::string_view XProfDeviceKind(std::string_view kind) {
  auto is = [&](std::string_view want) {
    return kind.size() == want.size() &&
           std::equal(kind.begin(), kind.end(), want.begin(),
                      [](char a, char b) {
                        return std::toupper(static_cast<unsigned char>(a)) == b;
                      });
  };
  if (is(kGpuKind)) return kGpuKind;
  if (is(kTpuKind)) return kTpuKind;
  return kCustomKind;
}

class Exporter {
 public:
  Exporter(const TraceReader& reader, const XSpaceExportOptions& options)
      : reader_(reader), options_(options) {}

  absl::StatusOr<xp::XSpace> Run() {
    delta_ = RealtimeMinusMonotonic(reader_);
    const proto::Metadata& m = reader_.metadata();
    space_.add_hostnames(m.host());

    // Planes: the host first, then one per device (in metadata order, then
    // devices only the tracks name).
    std::vector<std::pair<int32_t, std::string>> devices;
    for (const proto::Device& d : m.devices()) {
      devices.emplace_back(d.global_id(),
                           d.kind().empty() ? "DEVICE" : d.kind());
    }
    for (const proto::Track& t : reader_.tracks()) {
      if (t.kind() != proto::TRACK_KIND_DEVICE_STREAM) continue;
      const bool known =
          std::any_of(devices.begin(), devices.end(),
                      [&](auto& d) { return d.first == t.device_id(); });
      if (!known) devices.emplace_back(t.device_id(), "DEVICE");
    }
    std::vector<TrackEvents> all = reader_.ReadAllTracks(1);
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return a.track_id < b.track_id;
    });
    const size_t total = all.size();
    size_t done = 0;

    if (options_.host_tracer_level > 0) {
      PlaneBuilder host(AddPlane(std::string(kHostPlaneName)));
      proto::XSpacePlaneInfo info = BaseInfo(/*first=*/true);
      FindSteps(all);
      for (const TrackEvents& e : all) {
        const proto::Track* t = reader_.FindTrack(e.track_id);
        if (t == nullptr || t->kind() == proto::TRACK_KIND_DEVICE_STREAM)
          continue;
        AddTrack(host, *t, e, &info, /*device=*/false);
        if (options_.progress) options_.progress(++done, total);
      }
      AddStacks(&info);
      SetPlaneInfo(host, info);
    }
    if (options_.device_tracer_level > 0) {
      for (const auto& [device_id, kind] : devices) {
        PlaneBuilder dev(AddPlane(
            absl::StrCat(std::string(kDevicePlanePrefix),
                         std::string(XProfDeviceKind(kind)), ":", device_id)));
        xp::XStat* type = dev.plane()->add_stats();
        type->set_metadata_id(dev.StatMetadata(kDeviceTypeStat, false));
        type->set_str_value(kind);
        proto::XSpacePlaneInfo info =
            BaseInfo(/*first=*/options_.host_tracer_level <= 0 &&
                     space_.planes_size() == 1);
        for (const TrackEvents& e : all) {
          const proto::Track* t = reader_.FindTrack(e.track_id);
          if (t == nullptr || t->kind() != proto::TRACK_KIND_DEVICE_STREAM ||
              t->device_id() != device_id) {
            continue;
          }
          AddTrack(dev, *t, e, &info, /*device=*/true);
          if (options_.progress) options_.progress(++done, total);
        }
        // XProf derives a GPU plane's steps from its events' group_id; the
        // other planes carry their step markers.
        if (XProfDeviceKind(kind) != kGpuKind) AddStepsLine(dev);
        SetPlaneInfo(dev, info);
      }
    }
    if (truncated_ > 0) {
      space_.add_warnings(absl::StrCat(truncated_,
                                       " events left out (max_events ",
                                       options_.max_events, ")"));
    }
    return std::move(space_);
  }

  uint64_t events() const { return events_; }

 private:
  xp::XPlane* AddPlane(std::string name) {
    xp::XPlane* p = space_.add_planes();
    p->set_id(space_.planes_size());
    p->set_name(std::move(name));
    return p;
  }

  proto::XSpacePlaneInfo BaseInfo(bool first) {
    proto::XSpacePlaneInfo info;
    if (first) {
      *info.mutable_metadata() = reader_.metadata();
      *info.mutable_clock() = reader_.clock();
    }
    info.set_realtime_minus_monotonic_ns(delta_);
    return info;
  }

  void SetPlaneInfo(PlaneBuilder& b, const proto::XSpacePlaneInfo& info) {
    xp::XStat* s = b.plane()->add_stats();
    s->set_metadata_id(b.StatMetadata(kPlaneInfoStat, false));
    s->set_bytes_value(info.SerializeAsString());
  }

  void FindSteps(const std::vector<TrackEvents>& all) {
    const uint32_t step_key = FindString("step");
    for (const TrackEvents& e : all) {
      const proto::Track* t = reader_.FindTrack(e.track_id);
      if (t == nullptr || t->kind() != proto::TRACK_KIND_THREAD) continue;
      for (uint32_t i = 0; i < e.slices.size(); ++i) {
        const Slice& s = e.slices[i];
        if (s.depth != 0 || !IsStepName(reader_.GetString(s.name))) continue;
        StepSpan step{s.start_ns, s.end_ns(), -1, 0};
        if (const EventArgs* a = e.FindArgs(EventKind::kSlice, i)) {
          for (const Arg& arg : a->args) {
            if (arg.key == step_key && step_key != 0) {
              if (const auto* v = std::get_if<int64_t>(&arg.value)) {
                step.step_num = *v;
              }
            }
          }
        }
        step_index_[{e.track_id, i}] = steps_.size();
        steps_.push_back(step);
      }
    }
    // group_id numbers steps in time order, as XProf's grouping does.
    std::vector<size_t> order(steps_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return steps_[a].start_ns < steps_[b].start_ns;
    });
    for (size_t g = 0; g < order.size(); ++g) {
      StepSpan& s = steps_[order[g]];
      s.group_id = static_cast<int64_t>(g);
      if (s.step_num < 0) s.step_num = static_cast<int64_t>(g);
    }
    sorted_steps_ = steps_;
    std::sort(sorted_steps_.begin(), sorted_steps_.end(),
              [](const StepSpan& a, const StepSpan& b) {
                return a.start_ns < b.start_ns;
              });
  }

  uint32_t FindString(std::string_view s) {
    for (uint32_t id = 1; id < reader_.string_count(); ++id) {
      if (reader_.GetString(id) == s) return id;
    }
    return 0;
  }

  // The step whose span holds `ns`, or nullptr.
  const StepSpan* StepAt(int64_t ns) const {
    auto it = std::upper_bound(
        sorted_steps_.begin(), sorted_steps_.end(), ns,
        [](int64_t t, const StepSpan& s) { return t < s.start_ns; });
    if (it == sorted_steps_.begin()) return nullptr;
    --it;
    return ns < it->end_ns ? &*it : nullptr;
  }

  bool TakeEvent() {
    if (options_.max_events != 0 && events_ >= options_.max_events) {
      ++truncated_;
      return false;
    }
    ++events_;
    return true;
  }

  void AddDerivedInt(PlaneBuilder& b, xp::XEvent* e, std::string_view name,
                     int64_t value) {
    xp::XStat* s = e->add_stats();
    s->set_metadata_id(b.StatMetadata(name, /*derived=*/true));
    s->set_int64_value(value);
  }

  std::string FlowsText(const TrackEvents& e, EventKind kind, uint32_t index) {
    std::string text;
    auto it = std::lower_bound(
        e.flows.begin(), e.flows.end(), std::pair(kind, index),
        [](const FlowLink& f, const std::pair<EventKind, uint32_t>& k) {
          return std::pair(f.kind, f.index) < k;
        });
    for (; it != e.flows.end() && it->kind == kind && it->index == index;
         ++it) {
      absl::StrAppend(&text, text.empty() ? "" : ",", it->flow_id, ":",
                      static_cast<int>(it->phase));
    }
    return text;
  }

  void AddFlows(PlaneBuilder& b, const TrackEvents& e, EventKind kind,
                uint32_t index, xp::XEvent* x) {
    if (e.flows.empty()) return;
    std::string text = FlowsText(e, kind, index);
    if (text.empty()) return;
    xp::XStat* s = x->add_stats();
    s->set_metadata_id(b.StatMetadata(kFlowsStat, false));
    s->set_ref_value(static_cast<uint64_t>(b.StatMetadata(text, false)));
  }

  void AddTrack(PlaneBuilder& b, const proto::Track& t, const TrackEvents& e,
                proto::XSpacePlaneInfo* info, bool device) {
    const int64_t line_id = static_cast<int64_t>(t.id());
    proto::XSpaceLine* li = info->add_lines();
    li->set_line_id(line_id);
    *li->mutable_track() = t;
    auto drop = reader_.drop_counts().find(t.id());
    if (drop != reader_.drop_counts().end()) {
      li->set_dropped_events(drop->second);
    }
    const auto [first, last] = e.time_range();
    xp::XLine* line = b.plane()->add_lines();
    line->set_id(line_id);
    line->set_display_id(line_id);
    line->set_name(t.name());
    const int64_t base = e.empty() ? delta_ : SaturatingAdd(first, delta_);
    line->set_timestamp_ns(base);
    if (!e.empty()) line->set_duration_ps(ToPs(SaturatingSub(last, first)));
    auto offset_ps = [&](int64_t ns) {
      return ToPs(SaturatingSub(SaturatingAdd(ns, delta_), base));
    };
    const bool thread = t.kind() == proto::TRACK_KIND_THREAD;
    for (uint32_t i = 0; i < e.slices.size(); ++i) {
      if (!TakeEvent()) break;
      const Slice& s = e.slices[i];
      xp::XEvent* x = line->add_events();
      x->set_metadata_id(b.EventMetadata(reader_.GetString(s.name), false));
      x->set_offset_ps(offset_ps(s.start_ns));
      x->set_duration_ps(ToPs(s.duration_ns));
      if (const EventArgs* a = e.FindArgs(EventKind::kSlice, i)) {
        for (const Arg& arg : a->args) b.AddArg(reader_, arg, x);
      }
      AddFlows(b, e, EventKind::kSlice, i, x);
      if (thread && s.depth == 0) {
        auto step = step_index_.find({e.track_id, i});
        if (step != step_index_.end()) {
          const StepSpan& st = steps_[step->second];
          AddDerivedInt(b, x, kStepNumStat, st.step_num);
          AddDerivedInt(b, x, kRootStat, 1);
          AddDerivedInt(b, x, kGroupIdStat, st.group_id);
        }
      } else if (device && s.depth == 0) {
        if (const StepSpan* st = StepAt(s.start_ns)) {
          AddDerivedInt(b, x, kGroupIdStat, st->group_id);
        }
      }
    }
    for (uint32_t i = 0; i < e.instants.size(); ++i) {
      if (!TakeEvent()) break;
      const Instant& in = e.instants[i];
      xp::XEvent* x = line->add_events();
      x->set_metadata_id(b.EventMetadata(reader_.GetString(in.name), true));
      x->set_offset_ps(offset_ps(in.ts_ns));
      if (const EventArgs* a = e.FindArgs(EventKind::kInstant, i)) {
        for (const Arg& arg : a->args) b.AddArg(reader_, arg, x);
      }
      AddFlows(b, e, EventKind::kInstant, i, x);
    }
    if (!e.counters.empty()) {
      const int64_t meta = b.EventMetadata(t.name(), false);
      const int64_t value = b.StatMetadata(kCounterValueStat, false);
      for (const CounterSample& c : e.counters) {
        if (!TakeEvent()) break;
        xp::XEvent* x = line->add_events();
        x->set_metadata_id(meta);
        x->set_offset_ps(offset_ps(c.ts_ns));
        xp::XStat* s = x->add_stats();
        s->set_metadata_id(value);
        s->set_double_value(c.value);
      }
    }
    if (!e.samples.empty()) {
      // Samples get a line of their own beside the thread's events.
      const int64_t samples_id = line_id + kSamplesLineIdOffset;
      proto::XSpaceLine* si = info->add_lines();
      si->set_line_id(samples_id);
      *si->mutable_track() = t;
      si->set_content(proto::XSpaceLine::SAMPLES);
      xp::XLine* sl = b.plane()->add_lines();
      sl->set_id(samples_id);
      sl->set_display_id(samples_id);
      sl->set_name(absl::StrCat(t.name(), " (samples)"));
      sl->set_timestamp_ns(base);
      const int64_t stack_stat = b.StatMetadata(kStackStat, false);
      for (const StackSample& s : e.samples) {
        if (!TakeEvent()) break;
        xp::XEvent* x = sl->add_events();
        x->set_metadata_id(b.EventMetadata(LeafName(s.stack), true));
        x->set_offset_ps(offset_ps(s.ts_ns));
        xp::XStat* st = x->add_stats();
        st->set_metadata_id(stack_stat);
        st->set_uint64_value(s.stack);
        used_stacks_.insert(s.stack);
      }
    }
  }

  std::string LeafName(uint32_t stack_id) {
    const proto::Stack* s = reader_.FindStack(stack_id);
    if (s == nullptr || s->frame_ids().empty()) return "<unknown stack>";
    const proto::Frame* f = reader_.FindFrame(s->frame_ids(0));
    if (f == nullptr) return "<unknown frame>";
    return std::string(reader_.GetString(f->function_name()));
  }

  void AddStacks(proto::XSpacePlaneInfo* info) {
    std::map<uint32_t, uint32_t> frame_index;
    for (uint32_t stack_id : used_stacks_) {
      const proto::Stack* s = reader_.FindStack(stack_id);
      if (s == nullptr) continue;
      proto::XSpaceStack* xs = info->add_stacks();
      xs->set_id(stack_id);
      for (uint32_t fid : s->frame_ids()) {
        auto [it, added] = frame_index.emplace(fid, info->frames_size());
        if (added) {
          proto::XSpaceFrame* xf = info->add_frames();
          if (const proto::Frame* f = reader_.FindFrame(fid)) {
            xf->set_function_name(
                std::string(reader_.GetString(f->function_name())));
            xf->set_module_name(
                std::string(reader_.GetString(f->module_name())));
            xf->set_module_offset(f->module_offset());
            if (f->file_name() != 0) {
              xf->set_file_name(std::string(reader_.GetString(f->file_name())));
            }
            xf->set_line(f->line());
          }
        }
        xs->add_frames(it->second);
      }
    }
  }

  // A "Steps" line on a device plane: one event per host step, named by its
  // step number, with its group_id, on the line id where XProf's step
  // analysis looks for device step markers.
  void AddStepsLine(PlaneBuilder& b) {
    if (sorted_steps_.empty()) return;
    xp::XLine* line = b.plane()->add_lines();
    line->set_id(kStepsLineId);
    line->set_display_id(kStepsLineId);
    line->set_name(std::string(kStepsLineName));
    const int64_t base = SaturatingAdd(sorted_steps_.front().start_ns, delta_);
    line->set_timestamp_ns(base);
    for (const StepSpan& s : sorted_steps_) {
      xp::XEvent* x = line->add_events();
      x->set_metadata_id(b.EventMetadata(absl::StrCat(s.step_num), false));
      x->set_offset_ps(
          ToPs(SaturatingSub(SaturatingAdd(s.start_ns, delta_), base)));
      x->set_duration_ps(ToPs(SaturatingSub(s.end_ns, s.start_ns)));
      AddDerivedInt(b, x, kGroupIdStat, s.group_id);
    }
  }

  const TraceReader& reader_;
  const XSpaceExportOptions& options_;
  xp::XSpace space_;
  int64_t delta_ = 0;
  uint64_t events_ = 0;
  uint64_t truncated_ = 0;
  std::vector<StepSpan> steps_, sorted_steps_;
  std::map<std::pair<uint32_t, uint32_t>, size_t> step_index_;
  std::set<uint32_t> used_stacks_;
};

// Writes `bytes` under a fresh hidden name in `dir_fd`, then renames it
// to `stem + ext`, or `stem.<N> + ext` when that is taken: never through
// a link planted in the folder, never over an existing file. Returns the
// name given.
absl::StatusOr<std::string> WriteNewFile(int dir_fd, const fs::path& dir,
                                         const std::string& stem,
                                         std::string_view ext,
                                         const std::string& bytes) {
  base::UniqueFd fd;
  std::string tmp;
  std::error_code e =
      base::CreateFileExclusive(dir_fd, ".export-" + stem, ".tmp", &fd, &tmp);
  if (e) {
    return absl::PermissionDeniedError(
        absl::StrCat((dir / stem).string(), std::string(ext),
                     ": cannot write: ", e.message()));
  }
  e = base::WriteFully(fd.get(), bytes);
  if (std::error_code closed = fd.Close(); !e) e = closed;
  std::string name;
  if (!e) e = base::RenameToFreshName(dir_fd, tmp, stem, ext, &name);
  if (e) {
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    return absl::DataLossError(
        absl::StrCat((dir / tmp).string(), ": write failed: ", e.message()));
  }
  return name;
}

}  // namespace

absl::StatusOr<xp::XSpace> ToXSpace(const TraceReader& reader,
                                    const XSpaceExportOptions& options) {
  Exporter e(reader, options);
  return e.Run();
}

absl::StatusOr<XSpaceExportStats> ExportXSpace(
    std::span<const TraceReader* const> readers, const std::string& logdir,
    const std::string& session, const XSpaceExportOptions& options) {
  XSpaceExportStats stats;
  std::string name = session;
  if (name.empty() && !readers.empty()) {
    name = readers[0]->metadata().session_id();
  }
  name = base::SafeFileComponent(name.empty() ? "podscope" : name);
  const fs::path dir = fs::path(logdir) / "plugins" / "profile" / name;
  std::string failed_part;
  base::UniqueFd dir_fd;
  std::error_code ec = base::MakeDirectories(dir.string(), &failed_part);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(failed_part, ": cannot create: ", ec.message()));
  }
  if ((ec = base::OpenDirectory(dir.string(), &dir_fd))) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir.string(), ": cannot open: ", ec.message()));
  }
  std::map<std::string, int> per_host;
  for (const TraceReader* r : readers) ++per_host[r->metadata().host()];
  for (const TraceReader* r : readers) {
    Exporter exporter(*r, options);
    PODSCOPE_ASSIGN_OR_RETURN(auto space, exporter.Run());
    // The host comes from the file: one sanitiser makes it a name.
    const std::string host = base::SafeFileComponent(r->metadata().host());
    const std::string stem = per_host[r->metadata().host()] > 1
                                 ? absl::StrCat(host, ".", r->metadata().pid())
                                 : host;
    PODSCOPE_ASSIGN_OR_RETURN(
        auto written, WriteNewFile(dir_fd.get(), dir, stem, ".xplane.pb",
                                   space.SerializeAsString()));
    const fs::path path = dir / written;
    stats.files.push_back(path.string());
    stats.events += exporter.events();
    stats.bytes += fs::file_size(path, ec);
  }
  return stats;
}

}  // namespace podscope::trace_format
