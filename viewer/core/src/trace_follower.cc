#include "podscope/viewer/trace_follower.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "describe_track.h"
#include "podscope/base/parallel.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/chunk_codec.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/trace_files.h"
#include "podscope/viewer/clock_mapper.h"
#include "store_append.h"

namespace podscope::viewer {
namespace fs = std::filesystem;
namespace tf = trace_format;

struct TraceFollower::File {
  std::string path;
  uint64_t size_read = 0;  // the file's size when it was last read
  bool opened = false;
  bool final = false;
  ProcessId process = 0;
  std::string clock_key;  // the clock record, serialized
  bool aligned = false;
  uint64_t next_offset = 0;       // chunks from here on are not read yet
  std::vector<StringId> strings;  // file string id -> store id
  absl::flat_hash_map<uint32_t, TrackId> tracks;  // file track id -> store
  std::optional<LoadProblem> problem;
};

namespace {

// Puts a track's new events on the store's clock and string ids.
void ToStore(const std::vector<StringId>& strings, ClockMapper* clock,
             tf::TrackEvents* events) {
  auto map = [&](uint32_t id) {
    return id < strings.size() ? strings[id] : StringId{0};
  };
  for (tf::Slice& s : events->slices) s.name = map(s.name);
  for (tf::Instant& e : events->instants) e.name = map(e.name);
  for (tf::EventArgs& a : events->args) {
    for (tf::Arg& arg : a.args) {
      arg.key = map(arg.key);
      if (auto* s = std::get_if<tf::StringId>(&arg.value)) s->id = map(s->id);
    }
  }
  if (clock == nullptr) return;
  for (tf::Slice& s : events->slices) {
    const int64_t start = clock->ToReference(s.start_ns);
    const int64_t end = clock->ToReference(s.end_ns());
    s.start_ns = start;
    s.duration_ns = std::max<int64_t>(0, end - start);
  }
  for (tf::Instant& e : events->instants) e.ts_ns = clock->ToReference(e.ts_ns);
  for (tf::CounterSample& e : events->counters) {
    e.ts_ns = clock->ToReference(e.ts_ns);
  }
  for (tf::StackSample& e : events->samples) {
    e.ts_ns = clock->ToReference(e.ts_ns);
  }
  tf::SortTrackEvents(events);
}

}  // namespace

TraceFollower::TraceFollower(std::string path, FollowOptions options)
    : path_(std::move(path)),
      options_(options),
      store_(StoreAppender::NewStore(path_)) {}

TraceFollower::~TraceFollower() = default;

bool TraceFollower::all_final() const {
  if (files_.empty()) return false;
  for (const auto& f : files_) {
    if (!f->final) return false;
  }
  return true;
}

absl::StatusOr<FollowUpdate> TraceFollower::Refresh() {
  std::vector<std::string> paths;
  std::error_code ec;
  const fs::file_status st = fs::status(path_, ec);
  if (!ec && fs::is_regular_file(st)) {
    paths.push_back(path_);
  } else if (!ec && fs::is_directory(st)) {
    paths = trace_format::ListTraceFiles(path_);
  } else if (!ec && fs::exists(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": neither a trace file nor a folder"));
  }
  // A file that went away before it could be read is forgotten.
  std::erase_if(files_, [&](const std::unique_ptr<File>& f) {
    return !f->opened &&
           !std::binary_search(paths.begin(), paths.end(), f->path);
  });
  for (const std::string& p : paths) {
    auto known = std::find_if(files_.begin(), files_.end(),
                              [&](const auto& f) { return f->path == p; });
    if (known == files_.end()) {
      auto f = std::make_unique<File>();
      f->path = p;
      files_.push_back(std::move(f));
    }
  }

  FollowUpdate update;
  for (auto& f : files_) {
    if (f->final) continue;
    const uint64_t size = fs::file_size(f->path, ec);
    if (ec || (f->opened && size == f->size_read)) continue;
    if (size == 0) continue;  // created, nothing written yet
    if (absl::Status s = ReadFile(f.get(), &update); !s.ok()) {
      f->problem = LoadProblem{f->path, std::string(s.message()), f->opened,
                               size, f->opened ? 0 : size};
    }
  }
  std::vector<LoadProblem> problems;
  for (const auto& f : files_) {
    if (f->problem) problems.push_back(*f->problem);
  }
  StoreAppender::SetProblems(store_.get(), std::move(problems));
  SessionInfo session = store_->session();
  session.files = files_.size();
  StoreAppender::SetSession(store_.get(), std::move(session));
  StoreAppender::Finish(store_.get());
  return update;
}

// Reads what is new in one followed file into the store: its metadata,
// clock, strings and tracks, then the chunks not read yet.
class FileRefresh {
 public:
  FileRefresh(TraceStore* store, TraceFollower::File* file,
              const tf::TraceReader& reader, FollowUpdate* update)
      : store_(store),
        file_(file),
        reader_(reader),
        update_(update),
        clock_(reader.clock()) {}

  // Adds the file's process on first sight. False while the metadata is
  // not written yet: the process is placed by its host and rank.
  bool OpenProcess() {
    const tf::proto::Metadata& m = reader_.metadata();
    if (file_->opened) return true;
    if (m.ByteSizeLong() == 0) return false;
    ProcessInfo p;
    p.path = file_->path;
    p.host_name = m.host();
    file_->process = StoreAppender::AddProcess(store_, std::move(p));
    file_->opened = true;
    ++update_->files_added;
    return true;
  }

  // A later metadata record replaces the earlier one (the host stays).
  void UpdateMetadata() {
    const tf::proto::Metadata& m = reader_.metadata();
    ProcessInfo& process = this->process();
    process.pid = m.pid();
    process.process_index = m.process_index();
    process.process_count = m.process_count();
    process.session_id = m.session_id();
    process.metadata = m;
  }

  // Clock offsets. A capture writes them when it ends, and a job's
  // processes add them as they go: events already shown stay where the
  // offsets known then put them, new ones use the newest, and the file is
  // read again from its start when it starts being aligned or is closed
  // with offsets other than those its events were placed with, so that the
  // final store is the file loaded at once.
  void UpdateClock(bool align_clocks) {
    std::string clock_key = reader_.clock().SerializeAsString();
    const bool aligned = align_clocks && clock_.has_reference();
    const bool closed = reader_.report().has_index;
    if (clock_key != file_->clock_key &&
        (file_->next_offset == 0 || closed || aligned != file_->aligned)) {
      if (file_->next_offset > 0) {
        for (const auto& [id, track] : file_->tracks) {
          StoreAppender::Clear(store_, track);
        }
        file_->next_offset = 0;
        ++update_->files_reread;
      }
      file_->clock_key = std::move(clock_key);
    }
    file_->aligned = aligned;
    ProcessInfo& process = this->process();
    process.clock_aligned = file_->aligned;
    process.reference_clock.clear();
    for (const auto& o : reader_.clock().offsets()) {
      if (!o.reference().empty()) {
        process.reference_clock = o.reference();
        break;
      }
    }
    process.dropped = reader_.total_dropped();
  }

  void InternNewStrings() {
    for (size_t i = file_->strings.size(); i < reader_.string_count(); ++i) {
      file_->strings.push_back(StoreAppender::Intern(
          store_, reader_.GetString(static_cast<uint32_t>(i))));
    }
  }

  // Adds the tracks first seen, and renames those first named by their
  // events whose record is read now.
  void UpdateTracks() {
    for (const tf::proto::Track& t : reader_.tracks()) {
      const TrackId id = TrackOf(t.id());
      TrackInfo& info = StoreAppender::track(store_, id);
      TrackInfo described = DescribeTrack(reader_, t.id());
      if (info.name != described.name ||
          info.sort_index != described.sort_index) {
        described.id = id;
        described.process = file_->process;
        info = std::move(described);
        StoreAppender::Resort(store_, id);
      }
    }
  }

  // The events of the chunks not read yet, one merged list per file track,
  // by track id, on the store's clock and string ids; the stacks they
  // sample are interned into the process.
  std::vector<std::pair<TrackId, tf::TrackEvents>> ReadNewEvents() {
    absl::flat_hash_map<uint32_t, std::vector<tf::TrackEvents>> parts;
    std::vector<uint32_t> order;  // track ids in the order they arrived
    const std::vector<tf::ChunkInfo>& chunks = reader_.chunks();
    uint64_t next = file_->next_offset;
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (chunks[i].offset < file_->next_offset) continue;
      next = std::max(next, chunks[i].offset + chunks[i].length);
      auto decoded = reader_.DecodeChunk(i);
      if (!decoded.ok()) continue;  // in the recovery report
      for (tf::TrackEvents& e : *decoded) {
        auto& list = parts[e.track_id];
        if (list.empty()) order.push_back(e.track_id);
        list.push_back(std::move(e));
      }
    }
    file_->next_offset = next;
    std::sort(order.begin(), order.end());
    std::vector<std::pair<TrackId, tf::TrackEvents>> work;
    for (uint32_t id : order) {
      tf::TrackEvents events = tf::MergeTrackEvents(std::move(parts[id]));
      ToStore(file_->strings, file_->aligned ? &clock_ : nullptr, &events);
      InternStacks(events);
      work.emplace_back(TrackOf(id), std::move(events));
    }
    return work;
  }

  // Each track's columns are its own: they grow in parallel.
  void Append(std::vector<std::pair<TrackId, tf::TrackEvents>> work) {
    std::vector<uint64_t> added(work.size());
    base::ParallelFor(base::ThreadCount(0), work.size(), [&](size_t i) {
      added[i] = StoreAppender::Append(store_, work[i].first,
                                       std::move(work[i].second));
    });
    for (uint64_t n : added) update_->events_added += n;
  }

  void UpdateDropCounts() {
    for (const auto& [id, track] : file_->tracks) {
      auto it = reader_.drop_counts().find(id);
      StoreAppender::track(store_, track).dropped =
          it == reader_.drop_counts().end() ? 0 : it->second;
    }
  }

  // A file with its index is closed: nothing more will come.
  void FinishIfClosed() {
    const tf::RecoveryReport report = reader_.report();
    if (!report.has_index) return;
    file_->final = true;
    ++update_->files_finished;
    if (!report.intact()) {
      file_->problem = LoadProblem{file_->path, report.Describe(), true,
                                   report.file_bytes, report.skipped_bytes()};
    }
  }

 private:
  ProcessInfo& process() {
    return StoreAppender::process(store_, file_->process);
  }

  TrackId TrackOf(uint32_t file_track) {
    auto it = file_->tracks.find(file_track);
    if (it != file_->tracks.end()) return it->second;
    TrackInfo info = DescribeTrack(reader_, file_track);
    info.process = file_->process;
    const TrackId t = StoreAppender::AddTrack(store_, std::move(info));
    file_->tracks.emplace(file_track, t);
    return t;
  }

  // Each stack's frames by name, the first time the process sees it.
  void InternStacks(const tf::TrackEvents& events) {
    ProcessInfo& process = this->process();
    for (const tf::StackSample& s : events.samples) {
      if (process.stacks.contains(s.stack)) continue;
      std::vector<StringId>& frames = process.stacks[s.stack];
      const tf::proto::Stack* stack = reader_.FindStack(s.stack);
      if (stack == nullptr) continue;
      for (uint32_t fid : stack->frame_ids()) {
        const tf::proto::Frame* f = reader_.FindFrame(fid);
        uint32_t name = 0;
        if (f != nullptr) {
          name =
              f->function_name() != 0 ? f->function_name() : f->module_name();
        }
        frames.push_back(name < file_->strings.size() ? file_->strings[name]
                                                      : 0);
      }
    }
  }

  TraceStore* store_;
  TraceFollower::File* file_;
  const tf::TraceReader& reader_;
  FollowUpdate* update_;
  ClockMapper clock_;
};

absl::Status TraceFollower::ReadFile(File* file, FollowUpdate* update) {
  std::error_code ec;
  const uint64_t size = fs::file_size(file->path, ec);
  PODSCOPE_ASSIGN_OR_RETURN(auto reader, tf::TraceReader::Open(file->path));
  file->problem.reset();
  file->size_read = ec ? 0 : size;

  FileRefresh refresh(store_.get(), file, *reader, update);
  if (!refresh.OpenProcess()) {
    file->size_read = 0;  // read it again once the metadata is there
    return absl::OkStatus();
  }
  refresh.UpdateMetadata();
  refresh.UpdateClock(options_.align_clocks);
  refresh.InternNewStrings();
  refresh.UpdateTracks();
  refresh.Append(refresh.ReadNewEvents());
  refresh.UpdateDropCounts();
  refresh.FinishIfClosed();
  return absl::OkStatus();
}

}  // namespace podscope::viewer
