// TraceStore::Open: finds the session's files, loads them on a pool of
// threads (one file per thread at a time, chunk by chunk so that cancel and
// progress are prompt), then joins them in a fixed order so that the result
// does not depend on which thread finished first.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <tuple>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "describe_track.h"
#include "podscope/base/parallel.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/chunk_codec.h"
#include "podscope/trace_format/import.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/trace_files.h"
#include "podscope/viewer/clock_mapper.h"
#include "podscope/viewer/trace_store.h"
#include "store_append.h"
#include "store_overview.h"
#include "track_merge.h"

namespace podscope::viewer {
namespace fs = std::filesystem;
namespace tf = trace_format;
using internal::TrackBuffers;

namespace {

// One file, loaded but not yet joined to the store (ids are the file's).
struct LoadedFile {
  std::string path;
  bool loaded = false;
  std::optional<LoadProblem> problem;
  tf::proto::Metadata metadata;
  bool aligned = false;
  std::string reference;
  uint64_t dropped = 0;
  uint64_t events = 0;
  std::vector<std::string> strings;
  std::vector<TrackInfo> tracks;
  std::vector<std::unique_ptr<TrackData>> data;
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> stacks;
  // Opened as an overview: the summary instead of tracks and data.
  std::shared_ptr<const ProcessOverview> overview;
};

bool Cancelled(const OpenOptions& options) {
  return options.cancel != nullptr &&
         options.cancel->load(std::memory_order_relaxed);
}

// Converts one merged track to columns, on the reference clock. `events`
// is spent, its allocations kept for the next track.
std::unique_ptr<TrackData> ToColumns(tf::TrackEvents* events,
                                     ClockMapper* clock) {
  if (clock != nullptr) {
    // Rounding of a drifting clock may move an end by a nanosecond, and a
    // clock model whose offset falls faster than time runs may reorder
    // events: whether each kind is still in reader order is checked as it
    // is mapped, and only then sorted (in the same pass, since the slices
    // are far larger than the cache).
    bool sorted = true;
    const tf::Slice* previous = nullptr;
    for (tf::Slice& s : events->slices) {
      const int64_t start = clock->ToReference(s.start_ns);
      const int64_t end = clock->ToReference(s.end_ns());
      s.start_ns = start;
      s.duration_ns = std::max<int64_t>(0, end - start);
      if (previous != nullptr && tf::SliceOrder(s, *previous)) sorted = false;
      previous = &s;
    }
    auto map_times = [&](auto& column) {
      int64_t last = std::numeric_limits<int64_t>::min();
      for (auto& e : column) {
        e.ts_ns = clock->ToReference(e.ts_ns);
        if (e.ts_ns < last) sorted = false;
        last = e.ts_ns;
      }
    };
    map_times(events->instants);
    map_times(events->counters);
    map_times(events->samples);
    if (!sorted) tf::SortTrackEvents(events);
  }
  auto data = std::make_unique<TrackData>();
  std::vector<uint32_t> storage_of_reader;
  data->slices =
      SliceColumns::BuildWithDepths(&events->slices, &storage_of_reader);
  auto to_store = [&](tf::EventKind kind, uint32_t index) {
    return kind == tf::EventKind::kSlice && index < storage_of_reader.size()
               ? storage_of_reader[index]
               : index;
  };
  for (tf::EventArgs& a : events->args) a.index = to_store(a.kind, a.index);
  for (tf::FlowLink& f : events->flows) f.index = to_store(f.kind, f.index);
  auto key = [](const auto& x) { return std::make_pair(x.kind, x.index); };
  std::sort(events->args.begin(), events->args.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  std::sort(events->flows.begin(), events->flows.end(),
            [&](const auto& a, const auto& b) { return key(a) < key(b); });
  data->args = std::move(events->args);
  data->flows = std::move(events->flows);

  auto& in = data->instants;
  in.ts.reserve(events->instants.size());
  in.names.reserve(events->instants.size());
  for (const tf::Instant& e : events->instants) {
    in.ts.push_back(e.ts_ns);
    in.names.push_back(e.name);
  }
  auto& co = data->counters;
  co.ts.reserve(events->counters.size());
  co.values.reserve(events->counters.size());
  for (const tf::CounterSample& e : events->counters) {
    co.ts.push_back(e.ts_ns);
    co.values.push_back(e.value);
  }
  co.BuildIndexes();
  auto& sa = data->samples;
  sa.ts.reserve(events->samples.size());
  sa.stacks.reserve(events->samples.size());
  for (const tf::StackSample& e : events->samples) {
    sa.ts.push_back(e.ts_ns);
    sa.stacks.push_back(e.stack);
  }
  return data;
}

// Where each track ends in a file, from its index: how many events it has
// and the last chunk that holds any.
class TrackPlan {
 public:
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  size_t LastChunk(uint32_t track) const {
    auto it = tracks_.find(track);
    return it == tracks_.end() ? kNone : it->second.last_chunk;
  }
  uint64_t Events(uint32_t track) const {
    auto it = tracks_.find(track);
    return it == tracks_.end() ? 0 : it->second.events;
  }
  // False without an index (chunks whose tracks are learnt as they are
  // decoded): nothing is known to end before the file does.
  bool usable() const { return usable_; }

 private:
  friend TrackPlan PlanTracks(const tf::TraceReader& reader,
                              uint64_t file_bytes);
  struct Track {
    uint64_t events = 0;
    size_t last_chunk = 0;
  };
  absl::flat_hash_map<uint32_t, Track> tracks_;
  bool usable_ = true;
};

// Denser than any file the writer makes (a regular trace takes 0.69 bytes
// an event): an index that counts more events than this for the file's
// bytes is not believed about how much room its tracks need.
constexpr uint64_t kMaxEventsPerFileByte = 8;

TrackPlan PlanTracks(const tf::TraceReader& reader, uint64_t file_bytes) {
  TrackPlan plan;
  const std::vector<tf::ChunkInfo>& chunks = reader.chunks();
  uint64_t total = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (!chunks[i].ranges_known) {
      plan.tracks_.clear();
      plan.usable_ = false;
      break;
    }
    for (const tf::proto::TrackRange& r : chunks[i].tracks) {
      TrackPlan::Track& t = plan.tracks_[r.track_id()];
      t.events += r.event_count();
      t.last_chunk = i;
      // Saturating: the counts are the file's word, not checked yet.
      total = r.event_count() > std::numeric_limits<uint64_t>::max() - total
                  ? std::numeric_limits<uint64_t>::max()
                  : total + r.event_count();
    }
  }
  // Room is taken before the events are seen: never more than the file's
  // size can hold, whatever its index claims.
  if (total / kMaxEventsPerFileByte > file_bytes) {
    for (auto& [id, t] : plan.tracks_) t.events = 0;
  }
  return plan;
}

// A track of a file made columns, before the file's tracks are put in
// order.
struct FinishedTrack {
  TrackInfo info;
  std::unique_ptr<TrackData> data;
};

class Progress {
 public:
  Progress(const OpenOptions& options, size_t files)
      : options_(options), files_total_(files) {}
  void AddEvents(uint64_t n) {
    events_.fetch_add(n, std::memory_order_relaxed);
    Report(false);
  }
  void FileDone() {
    files_done_.fetch_add(1, std::memory_order_relaxed);
    Report(true);
  }

 private:
  void Report(bool always) {
    if (!options_.progress) return;
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    if (always) {
      lock.lock();
    } else if (!lock.try_lock()) {
      return;  // another thread is reporting; the next call catches up
    }
    options_.progress({files_done_.load(), files_total_, events_.load()});
  }
  const OpenOptions& options_;
  const size_t files_total_;
  std::atomic<size_t> files_done_{0};
  std::atomic<uint64_t> events_{0};
  std::mutex mutex_;
};

// The file was read: what of it was damaged goes into its problem.
void NoteDamage(const tf::TraceReader& reader, LoadedFile* out) {
  const tf::RecoveryReport report = reader.report();
  if (!report.intact()) {
    out->problem = LoadProblem{out->path, report.Describe(), true,
                               report.file_bytes, report.skipped_bytes()};
  }
  out->loaded = true;
}

void LoadFile(const std::string& path, const OpenOptions& options,
              bool overview_only, Progress* progress, TrackBuffers* buffers,
              LoadedFile* out) {
  out->path = path;
  std::error_code ec;
  const uint64_t file_bytes = fs::file_size(path, ec);
  auto reader_or = tf::TraceReader::Open(path);
  if (!reader_or.ok()) {
    out->problem = LoadProblem{path, std::string(reader_or.status().message()),
                               false, ec ? 0 : file_bytes, ec ? 0 : file_bytes};
    return;
  }
  const tf::TraceReader& reader = **reader_or;
  out->metadata = reader.metadata();
  out->dropped = reader.total_dropped();
  ClockMapper clock(reader.clock());
  out->aligned = options.align_clocks && clock.has_reference();
  for (const auto& o : reader.clock().offsets()) {
    if (!o.reference().empty()) {
      out->reference = o.reference();
      break;
    }
  }

  if (overview_only) {
    ClockMapper* to_store = out->aligned ? &clock : nullptr;
    std::optional<ProcessOverview> from_index;
    if (options.overview_from_index) {
      from_index = internal::SummarizeIndex(reader, to_store, &out->events);
    }
    auto o = std::make_shared<ProcessOverview>(
        from_index ? std::move(*from_index)
                   : internal::SummarizeTrace(reader, to_store, options.cancel,
                                              &out->events));
    progress->AddEvents(out->events);
    out->overview = std::move(o);
    NoteDamage(reader, out);
    return;
  }

  // Each chunk is decoded into the same vectors and copied onto its
  // tracks' merged columns, which come from (and go back to) `buffers`.
  // With an index, a track whose last chunk is decoded becomes columns at
  // once and gives its merged columns back for the next track, so that a
  // file whose tracks were written one after another (an import, a
  // generated trace) holds one track's merged columns instead of all.
  const TrackPlan plan = PlanTracks(reader, ec ? 0 : file_bytes);
  std::set<uint32_t> stack_ids;
  absl::flat_hash_map<uint32_t, FinishedTrack> finished;
  auto finish = [&](uint32_t id, internal::TrackMerger* merger) {
    tf::TrackEvents& merged = merger->Finish();
    FinishedTrack& f = finished[id];
    f.info = DescribeTrack(reader, id);
    if (auto it = reader.drop_counts().find(id);
        it != reader.drop_counts().end()) {
      f.info.dropped = it->second;
    }
    for (const tf::StackSample& s : merged.samples) stack_ids.insert(s.stack);
    out->events += merged.event_count();
    f.data = ToColumns(&merged, out->aligned ? &clock : nullptr);
    buffers->Give(std::move(merged));
  };
  // False when a chunk holds a track the index said was over: the file is
  // then read again without finishing tracks early.
  size_t disagreement = 0;
  auto read_chunks = [&](bool early, size_t reported) {
    absl::flat_hash_map<uint32_t, std::unique_ptr<internal::TrackMerger>> parts;
    std::vector<tf::TrackEvents> chunk;
    tf::Payload payload;
    for (size_t i = 0; i < reader.chunks().size(); ++i) {
      if (Cancelled(options)) return true;
      // A damaged chunk is in the recovery report.
      if (!reader.DecodeChunkInto(i, &chunk, &payload).ok()) continue;
      // The parts of tracks that end here go first, so that their merged
      // columns are free again before the tracks that begin here take some
      // (the partition is stable and puts all of a track's parts on one
      // side, so no track's parts change order).
      size_t ending = 0;
      if (early) {
        ending = std::stable_partition(chunk.begin(), chunk.end(),
                                       [&](const tf::TrackEvents& e) {
                                         return plan.LastChunk(e.track_id) == i;
                                       }) -
                 chunk.begin();
      }
      uint64_t n = 0;
      for (size_t k = 0; k < chunk.size(); ++k) {
        const tf::TrackEvents& e = chunk[k];
        if (early && finished.contains(e.track_id)) {
          disagreement = i;
          return false;
        }
        n += e.event_count();
        auto& merger = parts[e.track_id];
        if (merger == nullptr) {
          merger = std::make_unique<internal::TrackMerger>(
              buffers->Take(), plan.Events(e.track_id));
        }
        merger->Add(e);
        if (k + 1 == ending) {
          for (size_t j = 0; j < ending; ++j) {
            if (auto it = parts.find(chunk[j].track_id); it != parts.end()) {
              finish(it->first, it->second.get());
              parts.erase(it);
            }
          }
        }
      }
      if (i >= reported) progress->AddEvents(n);
    }
    for (auto& [id, merger] : parts) finish(id, merger.get());
    return true;
  };
  if (!read_chunks(plan.usable(), 0)) {
    // The index and the chunks disagree: start over, every track merged
    // to the end (the chunks before the disagreeing one were counted).
    finished.clear();
    stack_ids.clear();
    out->events = 0;
    read_chunks(false, disagreement);
  }
  if (Cancelled(options)) return;

  std::vector<uint32_t> ids;
  for (const tf::proto::Track& t : reader.tracks()) ids.push_back(t.id());
  std::vector<uint32_t> extra;
  for (const auto& [id, f] : finished) {
    if (reader.FindTrack(id) == nullptr) extra.push_back(id);
  }
  std::sort(extra.begin(), extra.end());
  ids.insert(ids.end(), extra.begin(), extra.end());

  for (uint32_t id : ids) {
    auto it = finished.find(id);
    if (it == finished.end()) {
      // A track with no events: its (empty) columns.
      internal::TrackMerger empty{tf::TrackEvents()};
      finish(id, &empty);
      it = finished.find(id);
    }
    out->data.push_back(std::move(it->second.data));
    out->tracks.push_back(std::move(it->second.info));
    finished.erase(it);  // a track listed twice is empty the second time
  }
  for (uint32_t id : stack_ids) {
    std::vector<uint32_t>& frames = out->stacks[id];
    if (const tf::proto::Stack* stack = reader.FindStack(id)) {
      for (uint32_t fid : stack->frame_ids()) {
        const tf::proto::Frame* f = reader.FindFrame(fid);
        uint32_t name = 0;
        if (f != nullptr) {
          name =
              f->function_name() != 0 ? f->function_name() : f->module_name();
        }
        frames.push_back(name);
      }
    }
  }
  out->strings.reserve(reader.string_count());
  for (size_t i = 0; i < reader.string_count(); ++i) {
    out->strings.emplace_back(reader.GetString(static_cast<uint32_t>(i)));
  }
  NoteDamage(reader, out);
}

// A track's file string ids to the store's.
void RemapTrackNames(const std::vector<uint32_t>& remap, TrackData* d) {
  auto map = [&](uint32_t id) { return id < remap.size() ? remap[id] : 0u; };
  d->slices.RemapNames(remap);
  for (uint32_t& n : d->instants.names) n = map(n);
  for (tf::EventArgs& a : d->args) {
    for (tf::Arg& arg : a.args) {
      arg.key = map(arg.key);
      if (auto* s = std::get_if<tf::StringId>(&arg.value)) s->id = map(s->id);
    }
  }
}

}  // namespace

// Joins loaded files into a store (a friend of TraceStore).
class StoreLoader {
 public:
  static absl::StatusOr<std::unique_ptr<TraceStore>> Open(
      const std::string& path, const OpenOptions& options);

 private:
  static StringId Intern(TraceStore* store, const std::string& s) {
    auto [it, added] = store->string_ids_.try_emplace(
        s, static_cast<StringId>(store->strings_.size()));
    if (added) store->strings_.push_back(s);
    return it->second;
  }
  static void Join(std::vector<LoadedFile> files, int threads,
                   TraceStore* store);
  // Loads `paths` as the session `chosen_path` of `sessions`.
  static absl::StatusOr<std::unique_ptr<TraceStore>> LoadPaths(
      const std::string& path, std::vector<std::string> paths,
      std::vector<SessionInfo> sessions, const std::string& chosen_path,
      const OpenOptions& options);
  // Interns a file's strings in the store and gives its stacks, named by
  // store ids, to `p`; the file's string ids to the store's.
  static std::vector<uint32_t> AdoptStrings(TraceStore* store, LoadedFile* file,
                                            ProcessInfo* p) {
    std::vector<uint32_t> remap(file->strings.size());
    for (size_t i = 0; i < file->strings.size(); ++i) {
      remap[i] = Intern(store, file->strings[i]);
    }
    for (auto& [id, frames] : file->stacks) {
      for (uint32_t& name : frames) {
        name = name < remap.size() ? remap[name] : 0;
      }
      p->stacks.emplace(id, std::move(frames));
    }
    return remap;
  }

 public:
  static absl::Status LoadDetail(TraceStore* store,
                                 const std::vector<ProcessId>& processes,
                                 int threads);
};

void StoreLoader::Join(std::vector<LoadedFile> files, int threads,
                       TraceStore* store) {
  std::vector<size_t> order;
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].problem) store->problems_.push_back(*files[i].problem);
    if (files[i].loaded) order.push_back(i);
  }
  auto key = [&](size_t i) {
    const auto& m = files[i].metadata;
    return std::make_tuple(m.host(), m.process_index(), m.pid(), files[i].path);
  };
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return key(a) < key(b); });

  Intern(store, "");
  struct Remap {
    std::vector<uint32_t> strings;
  };
  std::vector<size_t> track_file;  // by TrackId
  std::vector<Remap> remaps(files.size());
  for (size_t f : order) {
    LoadedFile& file = files[f];
    const ProcessId pid = static_cast<ProcessId>(store->processes_.size());
    ProcessInfo p;
    p.id = pid;
    p.path = file.path;
    p.host_name = file.metadata.host();
    p.pid = file.metadata.pid();
    p.process_index = file.metadata.process_index();
    p.process_count = file.metadata.process_count();
    p.session_id = file.metadata.session_id();
    p.metadata = std::move(file.metadata);
    p.clock_aligned = file.aligned;
    p.reference_clock = file.reference;
    p.dropped = file.dropped;
    p.events = file.events;
    if (file.overview) {
      p.overview = std::move(file.overview);
      p.detail = false;
    }
    if (store->hosts_.empty() || store->hosts_.back().name != p.host_name) {
      store->hosts_.push_back(
          {static_cast<HostId>(store->hosts_.size()), p.host_name, {}});
    }
    p.host = store->hosts_.back().id;
    store->hosts_.back().processes.push_back(pid);

    remaps[f].strings = AdoptStrings(store, &file, &p);
    std::vector<size_t> track_order(file.tracks.size());
    for (size_t i = 0; i < track_order.size(); ++i) track_order[i] = i;
    std::stable_sort(
        track_order.begin(), track_order.end(), [&](size_t a, size_t b) {
          return file.tracks[a].sort_index < file.tracks[b].sort_index;
        });
    for (size_t i : track_order) {
      TrackInfo t = std::move(file.tracks[i]);
      t.id = static_cast<TrackId>(store->tracks_.size());
      t.process = pid;
      p.tracks.push_back(t.id);
      track_file.push_back(f);
      store->tracks_.push_back(std::move(t));
      store->data_.push_back(std::move(file.data[i]));
    }
    store->processes_.push_back(std::move(p));
  }

  // Names to store ids, track by track in parallel.
  base::ParallelFor(threads, store->tracks_.size(), [&](size_t t) {
    RemapTrackNames(remaps[track_file[t]].strings, store->data_[t].get());
  });

  // Event counts, flows by id and the time span, as a grown store's.
  StoreAppender::Finish(store);
}

absl::StatusOr<std::unique_ptr<TraceStore>> StoreLoader::Open(
    const std::string& given_path, const OpenOptions& options) {
  if (!options.files.empty()) {
    SessionInfo s;
    s.name = fs::path(given_path).filename().string();
    s.path = given_path;
    s.files = options.files.size();
    return LoadPaths(given_path, options.files, {s}, given_path, options);
  }
  // Foreign traces (XSpace, Chrome JSON) are opened through their import.
  tf::ImportOptions import_options;
  import_options.cancel = options.cancel;
  PODSCOPE_ASSIGN_OR_RETURN(auto resolved,
                            tf::ResolveTracePath(given_path, import_options));
  const std::string& path = resolved;
  PODSCOPE_ASSIGN_OR_RETURN(auto sessions, TraceStore::ListSessions(path));
  const SessionInfo* chosen = &sessions.back();  // the newest
  if (!options.session.empty()) {
    chosen = nullptr;
    std::string names;
    for (const SessionInfo& s : sessions) {
      if (s.name == options.session) chosen = &s;
      absl::StrAppend(&names, names.empty() ? "" : ", ", s.name);
    }
    if (chosen == nullptr) {
      return absl::NotFoundError(absl::StrCat(path, ": no session named '",
                                              options.session,
                                              "' (found: ", names, ")"));
    }
  }
  const std::string chosen_path = chosen->path;
  std::vector<std::string> paths;
  std::error_code ec;
  if (fs::is_regular_file(chosen->path, ec)) {
    paths.push_back(chosen->path);
  } else {
    paths = trace_format::ListTraceFiles(chosen->path);
  }
  return LoadPaths(path, std::move(paths), std::move(sessions), chosen_path,
                   options);
}

absl::StatusOr<std::unique_ptr<TraceStore>> StoreLoader::LoadPaths(
    const std::string& path, std::vector<std::string> paths,
    std::vector<SessionInfo> sessions, const std::string& chosen_path,
    const OpenOptions& options) {
  std::vector<LoadedFile> files(paths.size());
  Progress progress(options, paths.size());
  const int threads = base::ThreadCount(options.threads);
  const bool overview =
      options.detail_files > 0 && paths.size() > options.detail_files;
  {
    // Freed before the store is joined and the heap trimmed.
    TrackBuffers buffers;
    base::ParallelFor(threads, paths.size(), [&](size_t i) {
      if (Cancelled(options)) return;
      LoadFile(paths[i], options, overview, &progress, &buffers, &files[i]);
      if (!Cancelled(options)) progress.FileDone();
    });
  }
  if (Cancelled(options)) {
    return absl::CancelledError(absl::StrCat("loading ", path, " cancelled"));
  }

  auto store = std::unique_ptr<TraceStore>(new TraceStore());
  store->overview_ = overview;
  store->align_clocks_ = options.align_clocks;
  store->sessions_ = std::move(sessions);
  store->session_ = *std::find_if(
      store->sessions_.begin(), store->sessions_.end(),
      [&](const SessionInfo& s) { return s.path == chosen_path; });
  bool any_loaded = false;
  for (const LoadedFile& f : files) any_loaded |= f.loaded;
  if (!any_loaded) {
    std::string why;
    for (const LoadedFile& f : files) {
      if (f.problem) absl::StrAppend(&why, "\n  ", f.problem->message);
    }
    return absl::DataLossError(
        absl::StrCat(path, ": no trace file could be read", why));
  }
  Join(std::move(files), threads, store.get());
#if defined(__GLIBC__)
  // Decoding allocated several times what the columns keep; give it back.
  malloc_trim(0);
#endif
  return store;
}

absl::StatusOr<std::unique_ptr<TraceStore>> TraceStore::Open(
    const std::string& path, const OpenOptions& options) {
  return StoreLoader::Open(path, options);
}

absl::Status StoreLoader::LoadDetail(TraceStore* store,
                                     const std::vector<ProcessId>& processes,
                                     int threads) {
  std::vector<ProcessId> todo;
  // Expanding every host of a pod asks for a thousand processes at once.
  std::vector<bool> asked(store->processes_.size());
  for (ProcessId p : processes) {
    if (p < store->processes_.size() && !store->processes_[p].detail &&
        !asked[p]) {
      asked[p] = true;
      todo.push_back(p);
    }
  }
  if (todo.empty()) return absl::OkStatus();
  OpenOptions options;
  options.align_clocks = store->align_clocks_;
  Progress progress(options, todo.size());
  std::vector<LoadedFile> files(todo.size());
  {
    TrackBuffers buffers;
    base::ParallelFor(base::ThreadCount(threads), todo.size(), [&](size_t i) {
      LoadFile(store->processes_[todo[i]].path, options,
               /*overview_only=*/false, &progress, &buffers, &files[i]);
    });
  }
  absl::Status status;
  for (size_t i = 0; i < todo.size(); ++i) {
    LoadedFile& file = files[i];
    ProcessInfo& p = store->processes_[todo[i]];
    if (!file.loaded) {
      const std::string why =
          file.problem ? file.problem->message : "cannot be read";
      if (status.ok()) status = absl::DataLossError(why);
      continue;
    }
    const std::vector<uint32_t> remap = AdoptStrings(store, &file, &p);
    std::vector<TrackId> added;
    for (size_t k = 0; k < file.tracks.size(); ++k) {
      TrackInfo t = std::move(file.tracks[k]);
      t.process = todo[i];
      added.push_back(StoreAppender::AddTrack(store, std::move(t)));
      store->data_[added.back()] = std::move(file.data[k]);
    }
    base::ParallelFor(base::ThreadCount(threads), added.size(), [&](size_t k) {
      RemapTrackNames(remap, store->data_[added[k]].get());
    });
    p.detail = true;
  }
  StoreAppender::Finish(store);
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  return status;
}

absl::Status TraceStore::LoadDetail(const std::vector<ProcessId>& processes,
                                    int threads) {
  return StoreLoader::LoadDetail(this, processes, threads);
}

}  // namespace podscope::viewer
