#include "podscope/trace_format/perfetto_export.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/utf8.h"
#include "podscope/trace_format/clock_model.h"
#include "podscope/trace_format/perfetto_trace.pb.h"

namespace podscope::trace_format {
namespace {

namespace pf = perfetto;

// The packets of a `Trace`, each framed as field 1 of the message.
class PacketOut {
 public:
  explicit PacketOut(std::FILE* f) : file_(f) {}
  ~PacketOut() {
    if (file_ != nullptr) std::fclose(file_);
  }
  absl::Status Write(const pf::TracePacket& packet) {
    scratch_.clear();
    packet.AppendToString(&scratch_);
    buffer_.push_back('\x0a');  // field 1, length-delimited
    uint64_t n = scratch_.size();
    while (n >= 0x80) {
      buffer_.push_back(static_cast<char>(n | 0x80));
      n >>= 7;
    }
    buffer_.push_back(static_cast<char>(n));
    buffer_.append(scratch_);
    ++packets_;
    return buffer_.size() >= (1u << 20) ? Drain() : absl::OkStatus();
  }
  absl::Status Close(const std::string& path) {
    absl::Status s = Drain();
    if (std::fclose(file_) != 0 && s.ok()) {
      s = absl::InternalError(
          absl::StrCat("write ", path, ": ", std::strerror(errno)));
    }
    file_ = nullptr;
    return s;
  }
  uint64_t packets() const { return packets_; }
  uint64_t bytes() const { return bytes_; }

 private:
  absl::Status Drain() {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) !=
        buffer_.size()) {
      return absl::InternalError(
          absl::StrCat("write failed: ", std::strerror(errno)));
    }
    bytes_ += buffer_.size();
    buffer_.clear();
    return absl::OkStatus();
  }
  std::FILE* file_;
  std::string buffer_, scratch_;
  uint64_t packets_ = 0, bytes_ = 0;
};

class FileExporter {
 public:
  FileExporter(const TraceReader& r, uint32_t index, int32_t pid,
               const PerfettoExportOptions& options, PacketOut* out)
      : r_(r),
        seq_(index + 1),
        pid_(pid),
        process_uuid_(static_cast<uint64_t>(index + 1) << 40),
        clock_(options.align_clocks ? ClockModel(r.clock()) : ClockModel()),
        out_(out) {}

  absl::Status WriteDescriptors() {
    const proto::Metadata& m = r_.metadata();
    pf::TracePacket p;
    p.set_trusted_packet_sequence_id(seq_);
    p.set_sequence_flags(pf::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    auto* d = p.mutable_track_descriptor();
    d->set_uuid(process_uuid_);
    auto* proc = d->mutable_process();
    proc->set_pid(pid_);
    std::string name = absl::StrCat(
        m.host().empty() ? "unknown host" : m.host(), " pid ", m.pid());
    if (m.process_index() >= 0) {
      absl::StrAppend(&name, " (process ", m.process_index());
      if (m.process_count() > 0) absl::StrAppend(&name, "/", m.process_count());
      name.push_back(')');
    }
    proc->set_process_name(Utf8(name));
    for (const std::string& arg : m.command_line()) {
      proc->add_cmdline(Utf8(arg));
    }
    if (!m.host().empty()) proc->add_process_labels(Utf8(m.host()));
    if (auto s = out_->Write(p); !s.ok()) return s;
    absl::flat_hash_set<int64_t> tids;
    for (const proto::Track& t : r_.tracks()) {
      int64_t tid = t.tid();
      if (t.kind() == proto::TRACK_KIND_THREAD &&
          (tid == 0 || !tids.insert(tid).second)) {
        tid = (int64_t{1} << 32) + t.id();  // unique within the process
        tids.insert(tid);
      }
      if (auto s = WriteTrack(t, 0, tid); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status WriteChunk(std::vector<TrackEvents>& tracks) {
    for (TrackEvents& e : tracks) {
      const proto::Track* t = r_.FindTrack(e.track_id);
      if (t == nullptr) continue;
      if (auto s = WriteEvents(*t, e); !s.ok()) return s;
      events_ += e.event_count();
    }
    return absl::OkStatus();
  }
  uint64_t events() const { return events_; }

 private:
  // proto2 `string` fields must hold valid UTF-8 for strict parsers.
  static std::string Utf8(std::string_view s) { return base::ToValidUtf8(s); }

  uint64_t TrackUuid(uint32_t track_id, size_t lane) const {
    return process_uuid_ | (static_cast<uint64_t>(track_id) << 8) | lane;
  }

  absl::Status WriteTrack(const proto::Track& t, size_t lane, int64_t tid) {
    pf::TracePacket p;
    p.set_trusted_packet_sequence_id(seq_);
    auto* d = p.mutable_track_descriptor();
    d->set_uuid(TrackUuid(t.id(), lane));
    std::string name = Utf8(t.name());
    if (lane > 0) absl::StrAppend(&name, " (overlap ", lane + 1, ")");
    if (lane > 0 || t.kind() != proto::TRACK_KIND_THREAD) {
      d->set_parent_uuid(lane > 0 ? TrackUuid(t.id(), 0) : process_uuid_);
      d->set_name(name);
      if (t.kind() == proto::TRACK_KIND_COUNTER) {
        d->mutable_counter()->set_unit_name(Utf8(t.unit()));
      }
    } else {
      d->set_parent_uuid(process_uuid_);
      auto* th = d->mutable_thread();
      th->set_pid(pid_);
      th->set_tid(tid);
      th->set_thread_name(name);
    }
    if (t.sort_index() != 0) d->set_sibling_order_rank(t.sort_index());
    return out_->Write(p);
  }

  uint64_t Ts(int64_t local_ns) const {
    return static_cast<uint64_t>(
        std::max<int64_t>(clock_.ToReference(local_ns), 0));
  }

  // A packet for an event on this sequence, interning `name`.
  pf::TrackEvent* NewEvent(uint64_t ts, uint64_t track_uuid,
                           pf::TrackEvent::Type type) {
    packet_.Clear();
    packet_.set_timestamp(ts);
    packet_.set_timestamp_clock_id(kPerfettoClockId);
    packet_.set_trusted_packet_sequence_id(seq_);
    packet_.set_sequence_flags(pf::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
    pf::TrackEvent* ev = packet_.mutable_track_event();
    ev->set_type(type);
    ev->set_track_uuid(track_uuid);
    return ev;
  }
  void SetName(pf::TrackEvent* ev, uint32_t name) {
    if (name == 0) {
      ev->set_name("");
      return;
    }
    if (name >= names_.size()) names_.resize(name + 1);
    if (!names_[name]) {
      names_[name] = true;
      auto* n = packet_.mutable_interned_data()->add_event_names();
      n->set_iid(name);
      n->set_name(Utf8(r_.GetString(name)));
    }
    ev->set_name_iid(name);
  }
  void SetArgs(pf::TrackEvent* ev, const EventArgs* args) {
    if (args == nullptr) return;
    for (const Arg& a : args->args) {
      auto* d = ev->add_debug_annotations();
      if (a.key == 0) {
        d->set_name("");
      } else {
        if (a.key >= arg_names_.size()) arg_names_.resize(a.key + 1);
        if (!arg_names_[a.key]) {
          arg_names_[a.key] = true;
          auto* n =
              packet_.mutable_interned_data()->add_debug_annotation_names();
          n->set_iid(a.key);
          n->set_name(Utf8(r_.GetString(a.key)));
        }
        d->set_name_iid(a.key);
      }
      if (const auto* i = std::get_if<int64_t>(&a.value)) {
        d->set_int_value(*i);
      } else if (const auto* v = std::get_if<double>(&a.value)) {
        d->set_double_value(*v);
      } else {
        d->set_string_value(Utf8(r_.GetString(std::get<StringId>(a.value).id)));
      }
    }
  }
  uint64_t FlowId(uint64_t id) const {
    return (static_cast<uint64_t>(seq_) << 48) ^
           (id & ((uint64_t{1} << 48) - 1));
  }
  void SetFlows(pf::TrackEvent* ev, const TrackEvents& e, EventKind kind,
                uint32_t index) {
    auto it = std::lower_bound(
        e.flows.begin(), e.flows.end(), std::make_pair(kind, index),
        [](const FlowLink& f, const std::pair<EventKind, uint32_t>& k) {
          return std::make_pair(f.kind, f.index) < k;
        });
    for (; it != e.flows.end() && it->kind == kind && it->index == index;
         ++it) {
      if (it->phase == FlowPhase::kEnd) {
        ev->add_terminating_flow_ids(FlowId(it->flow_id));
      } else {
        ev->add_flow_ids(FlowId(it->flow_id));
      }
    }
  }

  absl::Status EndSlice(uint64_t uuid, int64_t end_ns) {
    NewEvent(Ts(end_ns), uuid, pf::TrackEvent::TYPE_SLICE_END);
    return out_->Write(packet_);
  }

  absl::Status WriteEvents(const proto::Track& t, TrackEvents& e) {
    std::sort(e.flows.begin(), e.flows.end(),
              [](const FlowLink& a, const FlowLink& b) {
                return std::make_pair(a.kind, a.index) <
                       std::make_pair(b.kind, b.index);
              });
    // Slices in (start, end descending) order, each on the first lane it
    // nests in; a lane's open slices end (and are written) as later ones
    // start after them.
    std::vector<uint32_t> order(e.slices.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return SliceOrder(e.slices[a], e.slices[b]);
    });
    std::vector<std::vector<int64_t>> lanes;
    auto& extra = extra_lanes_[t.id()];
    for (uint32_t i : order) {
      const Slice& s = e.slices[i];
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) lanes.emplace_back();
        auto& open = lanes[lane];
        while (!open.empty() && open.back() <= s.start_ns) {
          if (auto st = EndSlice(TrackUuid(t.id(), lane), open.back());
              !st.ok()) {
            return st;
          }
          open.pop_back();
        }
        if (open.empty() || s.end_ns() <= open.back()) break;
      }
      if (lane > extra) {
        for (size_t k = extra + 1; k <= lane; ++k) {
          if (auto st = WriteTrack(t, k, 0); !st.ok()) return st;
        }
        extra = lane;
      }
      pf::TrackEvent* ev = NewEvent(Ts(s.start_ns), TrackUuid(t.id(), lane),
                                    pf::TrackEvent::TYPE_SLICE_BEGIN);
      SetName(ev, s.name);
      SetArgs(ev, e.FindArgs(EventKind::kSlice, i));
      SetFlows(ev, e, EventKind::kSlice, i);
      if (auto st = out_->Write(packet_); !st.ok()) return st;
      lanes[lane].push_back(s.end_ns());
    }
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      for (auto it = lanes[lane].rbegin(); it != lanes[lane].rend(); ++it) {
        if (auto st = EndSlice(TrackUuid(t.id(), lane), *it); !st.ok()) {
          return st;
        }
      }
    }
    const uint64_t uuid = TrackUuid(t.id(), 0);
    for (uint32_t i = 0; i < e.instants.size(); ++i) {
      pf::TrackEvent* ev =
          NewEvent(Ts(e.instants[i].ts_ns), uuid, pf::TrackEvent::TYPE_INSTANT);
      SetName(ev, e.instants[i].name);
      SetArgs(ev, e.FindArgs(EventKind::kInstant, i));
      SetFlows(ev, e, EventKind::kInstant, i);
      if (auto st = out_->Write(packet_); !st.ok()) return st;
    }
    for (const CounterSample& c : e.counters) {
      pf::TrackEvent* ev =
          NewEvent(Ts(c.ts_ns), uuid, pf::TrackEvent::TYPE_COUNTER);
      ev->set_double_counter_value(c.value);
      if (auto st = out_->Write(packet_); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  const TraceReader& r_;
  const uint32_t seq_;
  const int32_t pid_;
  const uint64_t process_uuid_;
  ClockModel clock_;
  PacketOut* out_;
  pf::TracePacket packet_;
  std::vector<bool> names_, arg_names_;  // interned on this sequence
  absl::flat_hash_map<uint32_t, size_t> extra_lanes_;  // lanes described
  uint64_t events_ = 0;
};

}  // namespace

absl::StatusOr<PerfettoExportStats> ExportPerfetto(
    std::span<const TraceReader* const> readers, const std::string& out_path,
    const PerfettoExportOptions& options) {
  std::FILE* f = std::fopen(out_path.c_str(), "wb");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create ", out_path, ": ", std::strerror(errno)));
  }
  PacketOut out(f);
  size_t total_chunks = 0, done = 0;
  for (const TraceReader* r : readers) total_chunks += r->chunks().size();
  absl::flat_hash_map<int64_t, int> pid_uses;
  for (const TraceReader* r : readers) ++pid_uses[r->metadata().pid()];
  PerfettoExportStats stats;
  for (size_t i = 0; i < readers.size(); ++i) {
    const TraceReader& r = *readers[i];
    const int64_t file_pid = r.metadata().pid();
    const auto pid = static_cast<int32_t>(
        pid_uses[file_pid] == 1 && file_pid > 0 && file_pid <= INT32_MAX
            ? file_pid
            : static_cast<int64_t>(i + 1));
    FileExporter exporter(r, static_cast<uint32_t>(i), pid, options, &out);
    if (auto s = exporter.WriteDescriptors(); !s.ok()) return s;
    for (size_t c = 0; c < r.chunks().size(); ++c) {
      auto decoded = r.DecodeChunk(c);
      // A damaged chunk is in the reader's report; the rest goes out.
      if (decoded.ok()) {
        if (auto s = exporter.WriteChunk(*decoded); !s.ok()) return s;
      }
      if (options.progress) options.progress(++done, total_chunks);
    }
    stats.events += exporter.events();
  }
  if (auto s = out.Close(out_path); !s.ok()) return s;
  stats.packets = out.packets();
  stats.bytes = out.bytes();
  return stats;
}

}  // namespace podscope::trace_format
