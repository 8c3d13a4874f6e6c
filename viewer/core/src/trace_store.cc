#include "podscope/viewer/trace_store.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "podscope/trace_format/trace_files.h"

namespace podscope::viewer {
namespace fs = std::filesystem;
using trace_format::EventKind;

namespace {

int64_t ModifiedNs(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  // On the system clock: the file clock's epoch may be far in the future.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::file_clock::to_sys(t).time_since_epoch())
      .count();
}

SessionInfo DescribeSession(const fs::path& dir,
                            const std::vector<std::string>& files) {
  SessionInfo s;
  s.name = dir.filename().string();
  if (s.name.empty()) s.name = dir.parent_path().filename().string();
  s.path = dir.string();
  s.files = files.size();
  s.modified_ns = std::numeric_limits<int64_t>::min();
  for (const std::string& f : files) {
    s.modified_ns = std::max(s.modified_ns, ModifiedNs(f));
  }
  return s;
}

}  // namespace

absl::StatusOr<std::vector<SessionInfo>> TraceStore::ListSessions(
    const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
  }
  if (fs::is_regular_file(st)) {
    SessionInfo s;
    s.name = fs::path(path).filename().string();
    s.path = path;
    s.files = 1;
    s.modified_ns = ModifiedNs(path);
    return std::vector<SessionInfo>{s};
  }
  if (!fs::is_directory(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": neither a trace file nor a folder"));
  }
  // A session folder: trace files directly inside.
  std::vector<std::string> direct = trace_format::ListTraceFiles(path);
  if (!direct.empty()) {
    return std::vector<SessionInfo>{DescribeSession(path, direct)};
  }
  // A logdir: sub-folders that are session folders.
  std::vector<SessionInfo> sessions;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    std::vector<std::string> files =
        trace_format::ListTraceFiles(it->path().string());
    if (!files.empty()) sessions.push_back(DescribeSession(it->path(), files));
  }
  if (sessions.empty()) {
    return absl::NotFoundError(absl::StrCat(
        path,
        ": no .podtrace file in the folder or in its session sub-folders"));
  }
  std::sort(sessions.begin(), sessions.end(),
            [](const SessionInfo& a, const SessionInfo& b) {
              if (a.modified_ns != b.modified_ns) {
                return a.modified_ns < b.modified_ns;
              }
              return a.name < b.name;
            });
  return sessions;
}

TraceStore::~TraceStore() = default;

std::optional<StringId> TraceStore::FindString(std::string_view s) const {
  auto it = string_ids_.find(std::string(s));
  if (it == string_ids_.end()) return std::nullopt;
  return it->second;
}

uint64_t TraceStore::slice_count() const {
  uint64_t n = 0;
  for (const auto& d : data_) n += d->slices.size();
  return n;
}

uint64_t TraceStore::session_event_count() const {
  uint64_t n = 0;
  for (const ProcessInfo& p : processes_) n += p.events;
  return n;
}

bool TraceStore::all_clocks_aligned() const {
  for (const ProcessInfo& p : processes_) {
    if (p.events > 0 && !p.clock_aligned) return false;
  }
  return true;
}

size_t TraceStore::resident_bytes() const {
  size_t bytes = 0;
  for (const auto& d : data_) {
    bytes += d->slices.resident_bytes();
    bytes += d->instants.ts.capacity() * 12;
    bytes += d->counters.ts.capacity() * 16 +
             d->counters.min_index.resident_bytes() +
             d->counters.max_index.resident_bytes();
    bytes += d->samples.ts.capacity() * 12;
    bytes += d->args.capacity() * sizeof(trace_format::EventArgs) +
             d->flows.capacity() * sizeof(trace_format::FlowLink);
  }
  for (const ProcessInfo& p : processes_) {
    if (p.overview != nullptr) {
      bytes += p.overview->busy.capacity() +
               p.overview->steps.capacity() * 2 * sizeof(int64_t);
    }
  }
  return bytes;
}

namespace {
template <typename T>
auto EventRange(const std::vector<T>& v, EventKind kind, uint32_t index) {
  auto key = [](const T& x) { return std::make_pair(x.kind, x.index); };
  return std::equal_range(
      v.begin(), v.end(), std::make_pair(kind, index),
      [&](const auto& a, const auto& b) {
        if constexpr (std::is_same_v<std::decay_t<decltype(a)>, T>) {
          return key(a) < b;
        } else {
          return a < key(b);
        }
      });
}
}  // namespace

std::vector<TraceStore::FlowEnd> TraceStore::Flows(
    const EventRef& event) const {
  std::vector<FlowEnd> out;
  if (event.track >= data_.size()) return out;
  const auto& flows = data_[event.track]->flows;
  auto [lo, hi] = EventRange(flows, event.kind, event.index);
  for (auto it = lo; it != hi; ++it) {
    auto found = flows_.find(it->flow_id);
    if (found == flows_.end()) continue;
    for (const auto& [other, phase] : found->second) {
      if (other == event) continue;
      out.push_back({it->flow_id, phase, other});
    }
  }
  return out;
}

const trace_format::EventArgs* TraceStore::FindArgs(
    const EventRef& event) const {
  if (event.track >= data_.size()) return nullptr;
  const auto& args = data_[event.track]->args;
  // Args are sorted by (kind, index) and slices come first: when every
  // slice up to this one has args, the slice's args sit at its index.
  if (event.kind == EventKind::kSlice && event.index < args.size()) {
    const trace_format::EventArgs& guess = args[event.index];
    if (guess.kind == EventKind::kSlice && guess.index == event.index) {
      return &guess;
    }
  }
  auto it = std::lower_bound(
      args.begin(), args.end(), std::make_pair(event.kind, event.index),
      [](const trace_format::EventArgs& a, const auto& key) {
        return std::make_pair(a.kind, a.index) < key;
      });
  return it != args.end() && it->kind == event.kind && it->index == event.index
             ? &*it
             : nullptr;
}

int64_t TraceStore::StartOf(const EventRef& e) const {
  const TrackData& d = *data_[e.track];
  return e.kind == EventKind::kSlice ? d.slices.start(e.index)
                                     : d.instants.ts[e.index];
}

int64_t TraceStore::DurationOf(const EventRef& e) const {
  const TrackData& d = *data_[e.track];
  return e.kind == EventKind::kSlice ? d.slices.duration(e.index) : 0;
}

StringId TraceStore::NameOf(const EventRef& e) const {
  const TrackData& d = *data_[e.track];
  return e.kind == EventKind::kSlice ? d.slices.name(e.index)
                                     : d.instants.names[e.index];
}

}  // namespace podscope::viewer
