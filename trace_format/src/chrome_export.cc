#include "podscope/trace_format/chrome_export.h"

#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/json.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/clock_model.h"

namespace podscope::trace_format {
namespace {

using base::AppendJsonString;

// Buffered output to a plain or a gzip file.
class JsonOut {
 public:
  static absl::StatusOr<std::unique_ptr<JsonOut>> Open(const std::string& path,
                                                       bool gzip) {
    auto out = std::unique_ptr<JsonOut>(new JsonOut(path));
    if (gzip) {
      out->gz_ = gzopen(path.c_str(), "wb6");
      if (out->gz_ == nullptr) {
        return absl::InternalError(
            absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
      }
    } else {
      out->file_ = std::fopen(path.c_str(), "wb");
      if (out->file_ == nullptr) {
        return absl::InternalError(
            absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
      }
    }
    return out;
  }
  ~JsonOut() { (void)Close(); }

  std::string& buffer() { return buffer_; }
  absl::Status MaybeDrain() {
    return buffer_.size() >= (1u << 20) ? Drain() : absl::OkStatus();
  }
  absl::Status Close() {
    absl::Status s = Drain();
    if (file_ != nullptr) {
      if (std::fclose(file_) != 0 && s.ok()) s = WriteError();
      file_ = nullptr;
    }
    if (gz_ != nullptr) {
      if (gzclose(gz_) != Z_OK && s.ok()) s = WriteError();
      gz_ = nullptr;
    }
    return s;
  }

 private:
  explicit JsonOut(std::string path) : path_(std::move(path)) {}
  absl::Status WriteError() {
    return absl::InternalError(
        absl::StrCat("write ", path_, ": ", std::strerror(errno)));
  }
  absl::Status Drain() {
    if (buffer_.empty()) return absl::OkStatus();
    bool ok = true;
    if (file_ != nullptr) {
      ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) ==
           buffer_.size();
    } else if (gz_ != nullptr) {
      ok =
          gzwrite(gz_, buffer_.data(), static_cast<unsigned>(buffer_.size())) ==
          static_cast<int>(buffer_.size());
    }
    buffer_.clear();
    return ok ? absl::OkStatus() : WriteError();
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  std::string buffer_;
};

// Microseconds with nanosecond precision, as the format wants.
void AppendMicros(int64_t ns, std::string* out) {
  if (ns < 0) {
    out->push_back('-');
    // Avoid overflow on INT64_MIN by working in unsigned.
    const uint64_t u = 0 - static_cast<uint64_t>(ns);
    absl::StrAppend(out, u / 1000);
    absl::StrAppendFormat(out, ".%03d", u % 1000);
    return;
  }
  absl::StrAppend(out, ns / 1000);
  absl::StrAppendFormat(out, ".%03d", ns % 1000);
}

void AppendDouble(double v, std::string* out) {
  if (std::isfinite(v)) {
    absl::StrAppendFormat(out, "%.17g", v);
  } else {
    AppendJsonString(std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity"),
                     out);
  }
}

class Exporter {
 public:
  Exporter(JsonOut* out, const ChromeExportOptions& options)
      : out_(out), options_(options) {}

  absl::Status Run(std::span<const TraceReader* const> readers) {
    std::string& b = out_->buffer();
    b.append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    size_t total_tracks = 0;
    for (const TraceReader* r : readers) total_tracks += r->tracks().size();
    absl::flat_hash_map<int64_t, int> pid_uses;
    for (const TraceReader* r : readers) ++pid_uses[r->metadata().pid()];
    size_t done = 0;
    for (size_t i = 0; i < readers.size(); ++i) {
      const TraceReader& r = *readers[i];
      const int64_t file_pid = r.metadata().pid();
      pid_ = (pid_uses[file_pid] == 1 && file_pid > 0)
                 ? file_pid
                 : static_cast<int64_t>(i + 1);
      clock_ = options_.align_clocks ? ClockModel(r.clock()) : ClockModel();
      WriteProcessMetadata(r);
      for (const proto::Track& track : r.tracks()) {
        TrackEvents events = r.ReadTrack(track.id());
        WriteTrack(r, track, events);
        if (auto s = out_->MaybeDrain(); !s.ok()) return s;
        if (options_.progress) options_.progress(++done, total_tracks);
      }
    }
    b.append("\n],\"stackFrames\":{");
    b.append(stack_frames_);
    b.append("}}\n");
    return out_->Close();
  }

  uint64_t events() const { return events_; }

 private:
  int64_t Ref(int64_t local_ns) const { return clock_.ToReference(local_ns); }

  // Starts an event object with ph, pid, tid.
  void Begin(char ph, uint32_t tid) {
    std::string& b = out_->buffer();
    if (!first_) b.append(",\n");
    first_ = false;
    absl::StrAppendFormat(&b, "{\"ph\":\"%c\",\"pid\":%d,\"tid\":%d", ph, pid_,
                          tid);
  }

  void WriteProcessMetadata(const TraceReader& r) {
    std::string& b = out_->buffer();
    const proto::Metadata& m = r.metadata();
    Begin('M', 0);
    b.append(",\"name\":\"process_name\",\"args\":{\"name\":");
    std::string label = absl::StrCat(
        m.host().empty() ? "unknown host" : m.host(), " pid ", m.pid());
    if (m.process_index() >= 0) {
      absl::StrAppend(&label, " (process ", m.process_index());
      if (m.process_count() > 0)
        absl::StrAppend(&label, "/", m.process_count());
      label.push_back(')');
    }
    AppendJsonString(label, &b);
    b.append("}}");
    if (m.process_index() >= 0) {
      Begin('M', 0);
      absl::StrAppendFormat(
          &b, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
          m.process_index());
    }
  }

  void WriteArgs(const TraceReader& r, const EventArgs* args) {
    if (args == nullptr) return;
    std::string& b = out_->buffer();
    b.append(",\"args\":{");
    bool first = true;
    for (const Arg& a : args->args) {
      if (!first) b.push_back(',');
      first = false;
      AppendJsonString(r.GetString(a.key), &b);
      b.push_back(':');
      if (const auto* i = std::get_if<int64_t>(&a.value)) {
        absl::StrAppend(&b, *i);
      } else if (const auto* d = std::get_if<double>(&a.value)) {
        AppendDouble(*d, &b);
      } else {
        AppendJsonString(r.GetString(std::get<StringId>(a.value).id), &b);
      }
    }
    b.push_back('}');
  }

  void WriteFlow(const FlowLink& f, uint32_t tid, int64_t ts) {
    static constexpr char kPhase[] = {'s', 't', 'f'};
    std::string& b = out_->buffer();
    Begin(kPhase[static_cast<int>(f.phase)], tid);
    b.append(",\"ts\":");
    AppendMicros(ts, &b);
    // Flow ids are per process in the file; keep them apart across files.
    absl::StrAppendFormat(
        &b,
        ",\"id\":\"%d:%d\",\"name\":\"flow\",\"cat\":\"flow\","
        "\"bp\":\"e\"}",
        pid_, f.flow_id);
  }

  // A sample's stack as a node of the stackFrames tree; returns its key.
  std::string StackNode(const TraceReader& r, uint32_t stack_id) {
    const proto::Stack* stack = r.FindStack(stack_id);
    std::string parent;
    if (stack == nullptr) return parent;
    for (int i = stack->frame_ids_size() - 1; i >= 0; --i) {
      const uint32_t frame_id = stack->frame_ids(i);
      std::string path = absl::StrCat(parent, "/", frame_id);
      auto [it, inserted] = frame_nodes_.try_emplace(
          absl::StrCat(pid_, path), static_cast<int>(frame_nodes_.size()));
      const std::string key = absl::StrCat(it->second);
      if (inserted) {
        const proto::Frame* f = r.FindFrame(frame_id);
        if (!stack_frames_.empty()) stack_frames_.push_back(',');
        AppendJsonString(key, &stack_frames_);
        stack_frames_.append(":{\"name\":");
        AppendJsonString(f ? r.GetString(f->function_name()) : "<unknown>",
                         &stack_frames_);
        stack_frames_.append(",\"category\":");
        AppendJsonString(f ? r.GetString(f->module_name()) : "",
                         &stack_frames_);
        if (!parent.empty()) {
          stack_frames_.append(",\"parent\":");
          AppendJsonString(parent, &stack_frames_);
        }
        stack_frames_.push_back('}');
      }
      parent = key;
    }
    return parent;
  }

  void WriteTrack(const TraceReader& r, const proto::Track& track,
                  const TrackEvents& e) {
    std::string& b = out_->buffer();
    const uint32_t tid = track.id();
    const bool counter = track.kind() == proto::TRACK_KIND_COUNTER;
    if (!counter) {
      Begin('M', tid);
      b.append(",\"name\":\"thread_name\",\"args\":{\"name\":");
      AppendJsonString(track.name(), &b);
      b.append("}}");
      Begin('M', tid);
      absl::StrAppendFormat(
          &b, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
          track.sort_index() != 0 ? track.sort_index() : static_cast<int>(tid));
    }
    size_t flow = 0;
    auto flows_of = [&](EventKind kind, uint32_t index, int64_t ts) {
      while (flow < e.flows.size() &&
             std::make_pair(e.flows[flow].kind, e.flows[flow].index) <
                 std::make_pair(kind, index)) {
        ++flow;
      }
      for (; flow < e.flows.size() && e.flows[flow].kind == kind &&
             e.flows[flow].index == index;
           ++flow) {
        WriteFlow(e.flows[flow], tid, ts);
      }
    };
    for (uint32_t i = 0; i < e.slices.size(); ++i) {
      const Slice& s = e.slices[i];
      const int64_t start = Ref(s.start_ns);
      Begin('X', tid);
      b.append(",\"ts\":");
      AppendMicros(start, &b);
      b.append(",\"dur\":");
      AppendMicros(std::max<int64_t>(Ref(s.end_ns()) - start, 0), &b);
      b.append(",\"name\":");
      AppendJsonString(r.GetString(s.name), &b);
      WriteArgs(r, e.FindArgs(EventKind::kSlice, i));
      b.push_back('}');
      flows_of(EventKind::kSlice, i, start);
    }
    for (uint32_t i = 0; i < e.instants.size(); ++i) {
      const int64_t ts = Ref(e.instants[i].ts_ns);
      Begin('i', tid);
      b.append(",\"s\":\"t\",\"ts\":");
      AppendMicros(ts, &b);
      b.append(",\"name\":");
      AppendJsonString(r.GetString(e.instants[i].name), &b);
      WriteArgs(r, e.FindArgs(EventKind::kInstant, i));
      b.push_back('}');
      flows_of(EventKind::kInstant, i, ts);
    }
    for (const CounterSample& c : e.counters) {
      Begin('C', tid);
      b.append(",\"ts\":");
      AppendMicros(Ref(c.ts_ns), &b);
      b.append(",\"name\":");
      AppendJsonString(track.name(), &b);
      b.append(",\"args\":{");
      AppendJsonString(track.unit().empty() ? "value" : track.unit(), &b);
      b.push_back(':');
      AppendDouble(c.value, &b);
      b.append("}}");
    }
    for (const StackSample& s : e.samples) {
      const std::string node = StackNode(r, s.stack);
      Begin('P', tid);
      b.append(",\"ts\":");
      AppendMicros(Ref(s.ts_ns), &b);
      b.append(",\"name\":\"cpu sample\"");
      if (!node.empty()) {
        b.append(",\"sf\":");
        AppendJsonString(node, &b);
      }
      b.push_back('}');
    }
    events_ += e.event_count();
  }

  JsonOut* out_;
  const ChromeExportOptions& options_;
  bool first_ = true;
  int64_t pid_ = 0;
  ClockModel clock_;
  uint64_t events_ = 0;
  absl::flat_hash_map<std::string, int> frame_nodes_;
  std::string stack_frames_;
};

}  // namespace

absl::StatusOr<ChromeExportStats> ExportChrome(
    std::span<const TraceReader* const> readers, const std::string& out_path,
    const ChromeExportOptions& options) {
  PODSCOPE_ASSIGN_OR_RETURN(auto out, JsonOut::Open(out_path, options.gzip));
  Exporter exporter(out.get(), options);
  if (auto s = exporter.Run(readers); !s.ok()) return s;
  ChromeExportStats stats;
  stats.events = exporter.events();
  std::error_code ec;
  stats.bytes = std::filesystem::file_size(out_path, ec);
  return stats;
}

}  // namespace podscope::trace_format
