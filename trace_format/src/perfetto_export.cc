#include "podscope/trace_format/perfetto_export.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/coding.h"
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
    base::PutVarint64(&buffer_, scratch_.size());
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

// The slices of one Perfetto track (a podtrace track, or one of its overlap
// lanes) across the chunks of a file. trace_processor sorts events by time
// (events of equal time stay in file order) and pairs each END with the
// innermost open slice of the track, so the slices of a lane must nest and
// an END must not meet a BEGIN of the same time in the wrong order. Slices
// usually come in start order; a parent may come in a later chunk than its
// children (a recorder writes scopes when they end). A lane keeps what
// deciding both needs, bounded: the chain of open slices for slices in
// start order, and the latest top-level slices for parents that come late.
class Lane {
 public:
  struct Open {
    int64_t end;
    bool end_written;
  };

  // Places [start, end] on the lane if it nests with every slice there;
  // `write_end(end)` writes the ENDs of slices that close before it.
  template <typename WriteEnd>
  bool Place(int64_t start, int64_t end, WriteEnd&& write_end) {
    if (start >= last_start_) {
      // In start order: it nests in the innermost open slice that ends
      // after it starts, or is a new top-level slice.
      size_t keep = open_.size();
      while (keep > 0 && open_[keep - 1].end <= start) --keep;
      if (keep > 0 && end > open_[keep - 1].end) return false;
      while (open_.size() > keep) {
        if (!open_.back().end_written) write_end(open_.back().end);
        open_.pop_back();
      }
      if (open_.empty()) AddRoot({start, end});
      open_.push_back({end, false});
      last_start_ = start;
      return true;
    }
    // Before slices already placed: only as a new top-level slice that
    // starts in a gap between top-level slices (strictly before the next
    // one, whose BEGIN is already written) and holds whole top-level slices
    // up to another gap.
    if (start < frozen_end_) return false;
    auto first =
        std::partition_point(roots_.begin(), roots_.end(),
                             [&](const Interval& r) { return r.end <= start; });
    if (first == roots_.end() || start >= first->start) return false;
    auto after = first;
    while (after != roots_.end() && after->start < end) {
      if (after->end > end) return false;
      ++after;
    }
    if (after != roots_.end() && after->start == end) return false;
    const bool holds_last = after == roots_.end() && first != after;
    first = roots_.erase(first, after);
    roots_.insert(first, {start, end});
    if (holds_last) {
      open_.insert(open_.begin(), {end, false});
    } else {
      closed_ends_.push_back(end);  // before the last top-level slice
    }
    return true;
  }

  // Writes the ENDs not written yet (at the end of a chunk); the slices
  // stay open for the nesting of later chunks' slices.
  template <typename WriteEnd>
  void WriteOpenEnds(WriteEnd&& write_end) {
    for (int64_t end : closed_ends_) write_end(end);
    closed_ends_.clear();
    for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
      if (!it->end_written) write_end(it->end);
      it->end_written = true;
    }
  }

 private:
  struct Interval {
    int64_t start, end;
  };
  // At most this many top-level slices are kept; older ones only leave
  // the time before which nothing more is placed.
  static constexpr size_t kMaxRoots = 512;

  void AddRoot(Interval r) {
    roots_.push_back(r);
    if (roots_.size() >= 2 * kMaxRoots) {
      for (size_t i = 0; i < kMaxRoots; ++i) {
        frozen_end_ = std::max(frozen_end_, roots_[i].end);
      }
      roots_.erase(roots_.begin(), roots_.begin() + kMaxRoots);
    }
  }

  std::vector<Open> open_;       // nested, outermost first
  std::vector<Interval> roots_;  // disjoint top-level slices, in time order
  std::vector<int64_t> closed_ends_;  // ENDs to write after their BEGINs
  int64_t last_start_ = std::numeric_limits<int64_t>::min();
  int64_t frozen_end_ = std::numeric_limits<int64_t>::min();
};

uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
  return x ^ (x >> 31);
}

// Flow ids, as the viewer matches them: across the files of a session. A
// flow that begins in one file and ends in another is one flow; ids that
// are complete within a file (or only ever dangle in one) are that file's
// own, since processes number their flows independently. Perfetto's ids
// are global, so a file's own ids are mixed with its index (top bit set)
// and shared ones are not (top bit clear).
class FlowIds {
 public:
  // Finds the ids that are incomplete (begin or end missing) in more than
  // one file. Decodes every chunk; a single file needs none of it.
  explicit FlowIds(std::span<const TraceReader* const> readers)
      : dangling_(readers.size()) {
    if (readers.size() < 2) return;
    absl::flat_hash_map<uint64_t, int> files_dangling;
    for (size_t f = 0; f < readers.size(); ++f) {
      // Begin (1) and end (2) seen; an id leaves once it has both, so the
      // map holds the flows in flight.
      absl::flat_hash_map<uint64_t, uint8_t> seen;
      const TraceReader& r = *readers[f];
      for (size_t c = 0; c < r.chunks().size(); ++c) {
        auto decoded = r.DecodeChunk(c);
        if (!decoded.ok()) continue;
        for (const TrackEvents& e : *decoded) {
          for (const FlowLink& link : e.flows) {
            const uint8_t bit = link.phase == FlowPhase::kBegin ? 1
                                : link.phase == FlowPhase::kEnd ? 2
                                                                : 0;
            uint8_t& mask = seen[link.flow_id];
            mask |= bit;
            if (mask == 3) seen.erase(link.flow_id);
          }
        }
      }
      for (const auto& [id, mask] : seen) {
        dangling_[f].insert(id);
        ++files_dangling[id];
      }
    }
    for (const auto& [id, files] : files_dangling) {
      if (files > 1) shared_.insert(id);
    }
    for (auto& ids : dangling_) {
      absl::erase_if(ids, [&](uint64_t id) { return !shared_.contains(id); });
    }
  }

  uint64_t Exported(size_t file, uint64_t id) const {
    constexpr uint64_t kTop = uint64_t{1} << 63;
    uint64_t out = dangling_[file].contains(id)
                       ? Mix(id) & ~kTop
                       : Mix(id + (file + 1) * 0x9e3779b97f4a7c15u) | kTop;
    return out == 0 ? 1 : out;
  }

 private:
  // Per file, its ids shared with another file.
  std::vector<absl::flat_hash_set<uint64_t>> dangling_;
  absl::flat_hash_set<uint64_t> shared_;
};

class FileExporter {
 public:
  FileExporter(const TraceReader& r, uint32_t index, int32_t pid,
               const PerfettoExportOptions& options, const FlowIds* flow_ids,
               PacketOut* out)
      : r_(r),
        index_(index),
        flow_ids_(flow_ids),
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

  int64_t Ts(int64_t local_ns) const {
    return std::max<int64_t>(clock_.ToReference(local_ns), 0);
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
  uint64_t FlowId(uint64_t id) const { return flow_ids_->Exported(index_, id); }
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

  // `ts`: an exported time.
  absl::Status EndSlice(uint64_t uuid, int64_t ts) {
    NewEvent(static_cast<uint64_t>(ts), uuid, pf::TrackEvent::TYPE_SLICE_END);
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
    // Lanes decide on the exported times, which trace_processor sorts.
    times_.resize(e.slices.size());
    for (size_t i = 0; i < e.slices.size(); ++i) {
      times_[i] = {Ts(e.slices[i].start_ns), Ts(e.slices[i].end_ns())};
    }
    order_.resize(e.slices.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) {
      if (times_[a].first != times_[b].first) {
        return times_[a].first < times_[b].first;
      }
      return times_[a].second > times_[b].second;
    });
    std::vector<Lane>& lanes = lanes_[t.id()];
    absl::Status status;
    for (uint32_t i : order_) {
      const auto [start, end] = times_[i];
      size_t lane = 0;
      for (;; ++lane) {
        if (lane == lanes.size()) {
          lanes.emplace_back();
          if (lane > 0) {
            if (auto st = WriteTrack(t, lane, 0); !st.ok()) return st;
          }
        }
        const uint64_t uuid = TrackUuid(t.id(), lane);
        auto write_end = [&](int64_t at) {
          if (status.ok()) status = EndSlice(uuid, at);
        };
        if (lanes[lane].Place(start, end, write_end)) break;
      }
      if (!status.ok()) return status;
      pf::TrackEvent* ev =
          NewEvent(static_cast<uint64_t>(start), TrackUuid(t.id(), lane),
                   pf::TrackEvent::TYPE_SLICE_BEGIN);
      SetName(ev, e.slices[i].name);
      SetArgs(ev, e.FindArgs(EventKind::kSlice, i));
      SetFlows(ev, e, EventKind::kSlice, i);
      if (auto st = out_->Write(packet_); !st.ok()) return st;
    }
    for (size_t lane = 0; lane < lanes.size(); ++lane) {
      const uint64_t uuid = TrackUuid(t.id(), lane);
      lanes[lane].WriteOpenEnds([&](int64_t at) {
        if (status.ok()) status = EndSlice(uuid, at);
      });
    }
    if (!status.ok()) return status;
    const uint64_t uuid = TrackUuid(t.id(), 0);
    for (uint32_t i = 0; i < e.instants.size(); ++i) {
      pf::TrackEvent* ev =
          NewEvent(static_cast<uint64_t>(Ts(e.instants[i].ts_ns)), uuid,
                   pf::TrackEvent::TYPE_INSTANT);
      SetName(ev, e.instants[i].name);
      SetArgs(ev, e.FindArgs(EventKind::kInstant, i));
      SetFlows(ev, e, EventKind::kInstant, i);
      if (auto st = out_->Write(packet_); !st.ok()) return st;
    }
    for (const CounterSample& c : e.counters) {
      pf::TrackEvent* ev = NewEvent(static_cast<uint64_t>(Ts(c.ts_ns)), uuid,
                                    pf::TrackEvent::TYPE_COUNTER);
      ev->set_double_counter_value(c.value);
      if (auto st = out_->Write(packet_); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  const TraceReader& r_;
  const uint32_t index_;
  const FlowIds* flow_ids_;
  const uint32_t seq_;
  const int32_t pid_;
  const uint64_t process_uuid_;
  ClockModel clock_;
  PacketOut* out_;
  pf::TracePacket packet_;
  std::vector<bool> names_, arg_names_;  // interned on this sequence
  // Per track, its lanes (lane 0 the track itself), kept across chunks.
  absl::flat_hash_map<uint32_t, std::vector<Lane>> lanes_;
  std::vector<std::pair<int64_t, int64_t>> times_;  // a chunk's, reused
  std::vector<uint32_t> order_;
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
  const FlowIds flow_ids(readers);
  PerfettoExportStats stats;
  for (size_t i = 0; i < readers.size(); ++i) {
    const TraceReader& r = *readers[i];
    const int64_t file_pid = r.metadata().pid();
    const auto pid = static_cast<int32_t>(
        pid_uses[file_pid] == 1 && file_pid > 0 && file_pid <= INT32_MAX
            ? file_pid
            : static_cast<int64_t>(i + 1));
    FileExporter exporter(r, static_cast<uint32_t>(i), pid, options, &flow_ids,
                          &out);
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
