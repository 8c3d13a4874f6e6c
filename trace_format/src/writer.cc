#include "podscope/trace_format/writer.h"

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "podscope/base/sorting.h"
#include "podscope/base/status_macros.h"
#include "podscope/base/utf8.h"
#include "podscope/trace_format/chunk_codec.h"
#include "podscope/trace_format/trailer.h"
#include "track_range.h"

namespace podscope::trace_format {
namespace {

// Dictionary records smaller than this are not worth compressing.
constexpr size_t kCompressThreshold = 256;

// Reorders slices that arrive in end order (each slice after the slices
// nested in it, as a recorder emits them) into reader order. In end order
// a slice's subtree is the run of slices ending at it; in reader order the
// same subtree takes the same positions, the slice itself first. So a
// slice's place is the first position of its subtree plus its depth: one
// pass forward finds subtrees, one backward finds depths and places the
// slices. True when the result is in SliceOrder (it is then applied, with
// argument and flow indices remapped); false, changing nothing, when the
// slices were in another order.
bool EndOrderToReaderOrder(TrackEvents* events) {
  std::vector<Slice>& slices = events->slices;
  const size_t n = slices.size();
  if (n < 2 || n > UINT32_MAX) return n < 2;
  // SliceOrder(b, a), ends computed only on equal starts.
  auto before = [](const Slice& b, const Slice& a) {
    return b.start_ns < a.start_ns ||
           (b.start_ns == a.start_ns && b.end_ns() > a.end_ns());
  };
  // Slices that do not nest (one scope over and over) end in the order
  // they start: nothing to do. Nested ones fail this at the first parent.
  {
    size_t i = 1;
    while (i < n && !before(slices[i], slices[i - 1])) ++i;
    if (i == n) return true;
  }
  // Scratch kept per thread between chunks; it only grows.
  struct Root {
    int64_t start, end;
    uint32_t first;
  };
  thread_local std::vector<uint32_t> first;  // subtree start, then position
  thread_local std::vector<uint32_t> stack;
  thread_local std::vector<Root> roots;
  thread_local std::vector<Slice> placed;
  if (first.size() < n) first.resize(n);
  if (stack.size() < n) stack.resize(n);
  if (roots.size() < n) roots.resize(n);
  placed.resize(n);
  const Slice* const in = slices.data();
  uint32_t* const f = first.data();
  uint32_t* const st = stack.data();
  // The finished subtrees not yet adopted, with their times at hand.
  Root* const r = roots.data();
  size_t depth = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const int64_t start = in[i].start_ns, end = in[i].end_ns();
    uint32_t from = i;
    // Adopt the finished subtrees this slice contains.
    while (depth > 0 && r[depth - 1].start >= start &&
           r[depth - 1].end <= end) {
      from = r[--depth].first;
    }
    f[i] = from;
    r[depth++] = {start, end, from};
  }
  Slice* const out = placed.data();
  depth = 0;  // the stack now holds the subtree starts of the ancestors
  for (uint32_t i = static_cast<uint32_t>(n); i-- > 0;) {
    while (depth > 0 && st[depth - 1] > i) --depth;
    const uint32_t from = f[i];
    const uint32_t position = from + static_cast<uint32_t>(depth);
    out[position] = in[i];
    f[i] = position;
    st[depth++] = from;
  }
  for (size_t i = 1; i < n; ++i) {
    if (before(out[i], out[i - 1])) return false;
  }
  slices.swap(placed);
  for (EventArgs& a : events->args) {
    if (a.kind == EventKind::kSlice && a.index < n) a.index = f[a.index];
  }
  for (FlowLink& l : events->flows) {
    if (l.kind == EventKind::kSlice && l.index < n) l.index = f[l.index];
  }
  // Scratch is kept between chunks unless a huge track grew it.
  if (first.size() > (size_t{1} << 17)) {
    std::vector<Slice>().swap(placed);
    std::vector<uint32_t>().swap(first);
    std::vector<uint32_t>().swap(stack);
    std::vector<Root>().swap(roots);
  }
  return true;
}

template <typename T, typename Less>
bool Sorted(const std::vector<T>& v, Less less) {
  return std::is_sorted(v.begin(), v.end(), less);
}

// Puts a track's events in reader order: the common case (slices in end
// order, everything else already in order) without SortTrackEvents' general
// search.
void ToReaderOrder(TrackEvents* e) {
  auto by_time = [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; };
  auto by_event = [](const auto& a, const auto& b) {
    return std::make_pair(a.kind, a.index) < std::make_pair(b.kind, b.index);
  };
  if (EndOrderToReaderOrder(e) && Sorted(e->instants, by_time) &&
      Sorted(e->counters, by_time) && Sorted(e->samples, by_time)) {
    // Placing the slices renumbered them: the arguments and flows of
    // nested slices follow their slices' new order, which a sort of these
    // (few) entries restores, as SortTrackEvents would after its own
    // placement, without searching the slices again.
    base::StableSortNearlySorted(e->args, by_event);
    base::StableSortNearlySorted(e->flows, by_event);
    return;
  }
  SortTrackEvents(e);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(
    const std::string& path, const WriterOptions& options) {
  PODSCOPE_ASSIGN_OR_RETURN(auto sink, OpenFileSink(path));
  return Create(std::move(sink), options);
}

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(
    std::unique_ptr<RecordSink> sink, const WriterOptions& options) {
  if (options.compression_level < 0 || options.compression_level > 9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compression_level must be 0..9, got ", options.compression_level));
  }
  std::unique_ptr<TraceWriter> writer(
      new TraceWriter(std::move(sink), options));
  std::string header = EncodeFileHeader();
  if (auto s = writer->sink_->Append(header); !s.ok()) return s;
  writer->stats_.bytes = header.size();
  if (options.background_thread) {
    writer->worker_ = std::thread([w = writer.get()] { w->WorkerLoop(); });
  }
  return writer;
}

TraceWriter::TraceWriter(std::unique_ptr<RecordSink> sink,
                         const WriterOptions& options)
    : sink_(std::move(sink)), options_(options) {
  string_ids_.emplace("", 0);
  pending_strings_.set_first_id(1);
  if (options_.chunk_events == 0) options_.chunk_events = 1;
}

TraceWriter::~TraceWriter() { (void)Close(); }

void TraceWriter::SetMetadata(const proto::Metadata& metadata) {
  pending_metadata_ = std::make_unique<proto::Metadata>(metadata);
  // Map keys are protobuf `string`s, which readers reject whole when they
  // are not UTF-8 (values are `bytes` and kept as they are).
  for (auto* map : {pending_metadata_->mutable_attributes(),
                    pending_metadata_->mutable_capture_options()}) {
    std::vector<std::pair<std::string, std::string>> repaired;
    for (auto it = map->begin(); it != map->end();) {
      if (base::IsValidUtf8(it->first)) {
        ++it;
        continue;
      }
      repaired.emplace_back(base::ToValidUtf8(it->first), it->second);
      it = map->erase(it);
    }
    for (auto& [key, value] : repaired) map->try_emplace(key, value);
  }
}

uint32_t TraceWriter::InternString(std::string_view s) {
  auto it = string_ids_.find(absl::string_view(s.data(), s.size()));
  if (it != string_ids_.end()) return it->second;
  const uint32_t id = next_string_id_++;
  string_ids_.emplace(std::string(s), id);
  pending_strings_.add_strings(std::string(s));
  return id;
}

uint32_t TraceWriter::AddTrack(const proto::Track& track) {
  const uint32_t id = static_cast<uint32_t>(tracks_.size() + 1);
  tracks_.push_back(track);
  tracks_.back().set_id(id);
  pending_events_.emplace_back().track_id = id;
  return id;
}

void TraceWriter::UpdateTrack(uint32_t id, const proto::Track& track) {
  if (id == 0 || id > tracks_.size()) return;
  tracks_[id - 1] = track;
  tracks_[id - 1].set_id(id);
  if (id <= tracks_written_) tracks_updated_.push_back(id);
}

uint32_t TraceWriter::AddFrame(const proto::Frame& frame) {
  proto::Frame* f = pending_stacks_.add_frames();
  *f = frame;
  f->set_id(next_frame_id_++);
  return f->id();
}

uint32_t TraceWriter::AddStack(std::span<const uint32_t> frame_ids) {
  proto::Stack* s = pending_stacks_.add_stacks();
  s->set_id(next_stack_id_++);
  s->mutable_frame_ids()->Add(frame_ids.begin(), frame_ids.end());
  return s->id();
}

void TraceWriter::AddClockSnapshot(int64_t monotonic_ns, int64_t realtime_ns) {
  proto::ClockSnapshot* s = pending_clock_.add_snapshots();
  s->set_monotonic_ns(monotonic_ns);
  s->set_realtime_ns(realtime_ns);
}

void TraceWriter::AddClockOffset(const proto::ClockOffset& offset) {
  *pending_clock_.add_offsets() = offset;
}

void TraceWriter::SetDropCount(uint32_t track_id, uint64_t dropped_events) {
  for (proto::DropCount& d : *pending_drops_.mutable_counts()) {
    if (d.track_id() == track_id) {
      d.set_dropped_events(dropped_events);
      return;
    }
  }
  proto::DropCount* d = pending_drops_.add_counts();
  d->set_track_id(track_id);
  d->set_dropped_events(dropped_events);
}

TrackEvents& TraceWriter::Pending(uint32_t track_id) {
  if (track_id == 0 || track_id > pending_events_.size()) {
    // An id AddTrack never returned is a caller's bug; keep the events, on
    // tracks whose names say so, rather than lose them or crash.
    proto::Track t;
    t.set_kind(proto::TRACK_KIND_THREAD);
    if (track_id == 0) {
      if (track_zero_ == 0) {
        t.set_name("events recorded on track id 0");
        track_zero_ = AddTrack(t);
      }
      return pending_events_[track_zero_ - 1];
    }
    while (pending_events_.size() < track_id) {
      t.set_name(absl::StrCat("unknown track ", pending_events_.size() + 1));
      AddTrack(t);
    }
  }
  return pending_events_[track_id - 1];
}

EventRef TraceWriter::AddSliceSlow(uint32_t track_id, int64_t start_ns,
                                   int64_t duration_ns, uint32_t name,
                                   std::span<const Arg> args) {
  MaybeWriteChunk();
  TrackEvents& e = Pending(track_id);
  const uint32_t index = static_cast<uint32_t>(e.slices.size());
  e.slices.push_back({start_ns, std::max<int64_t>(duration_ns, 0), name, 0});
  if (!args.empty()) {
    e.args.push_back({EventKind::kSlice, index, {args.begin(), args.end()}});
  }
  ++pending_event_count_;
  return {e.track_id, EventKind::kSlice, index};
}

EventRef TraceWriter::AddInstant(uint32_t track_id, int64_t ts_ns,
                                 uint32_t name, std::span<const Arg> args) {
  MaybeWriteChunk();
  TrackEvents& e = Pending(track_id);
  const uint32_t index = static_cast<uint32_t>(e.instants.size());
  e.instants.push_back({ts_ns, name});
  if (!args.empty()) {
    e.args.push_back({EventKind::kInstant, index, {args.begin(), args.end()}});
  }
  ++pending_event_count_;
  return {e.track_id, EventKind::kInstant, index};
}

void TraceWriter::AddCounter(uint32_t track_id, int64_t ts_ns, double value) {
  MaybeWriteChunk();
  Pending(track_id).counters.push_back({ts_ns, value});
  ++pending_event_count_;
}

void TraceWriter::AddSample(uint32_t track_id, int64_t ts_ns,
                            uint32_t stack_id) {
  MaybeWriteChunk();
  Pending(track_id).samples.push_back({ts_ns, stack_id});
  ++pending_event_count_;
}

void TraceWriter::AddFlow(const EventRef& event, uint64_t flow_id,
                          FlowPhase phase) {
  TrackEvents& e = Pending(event.track_id);
  const size_t count =
      event.kind == EventKind::kSlice ? e.slices.size() : e.instants.size();
  if (event.index >= count) return;  // stale ref: the event is in a chunk
  e.flows.push_back({event.kind, event.index, flow_id, phase});
}

void TraceWriter::MaybeWriteChunk() {
  // Called before an event is added, so that the EventRef of the previous
  // event stays valid for AddFlow until the next Add call.
  if (pending_event_count_ < options_.chunk_events) return;
  if (!error_.ok()) return;
  error_ = WriteDictionaries();
  if (error_.ok()) error_ = WriteChunk();
}

WriterStats TraceWriter::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void TraceWriter::TakeChunkEntries(std::vector<proto::ChunkEntry>* chunks) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (proto::ChunkEntry& e : *index_.mutable_chunks()) {
    chunks->push_back(std::move(e));
  }
  index_.clear_chunks();
  index_.clear_records();
}

absl::Status TraceWriter::AppendRecord(RecordType type,
                                       const std::string& framed) {
  if (auto s = sink_->Append(framed); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mutex_);
  if (type != RecordType::kChunk && type != RecordType::kIndex &&
      type != RecordType::kTrailer) {
    proto::RecordEntry* r = index_.add_records();
    r->set_type(static_cast<uint32_t>(type));
    r->set_offset(stats_.bytes);
    r->set_length(framed.size());
  }
  stats_.bytes += framed.size();
  return absl::OkStatus();
}

absl::Status TraceWriter::Submit(Job job) {
  if (!worker_.joinable()) return Run(job);
  std::unique_lock<std::mutex> lock(mutex_);
  if (job.kind == Job::kChunk) {
    work_done_.wait(lock, [&] {
      return queued_chunks_ < std::max<size_t>(options_.max_queued_chunks, 1) ||
             !worker_error_.ok();
    });
    ++queued_chunks_;
  }
  queue_.push_back(std::move(job));
  work_ready_.notify_one();
  return worker_error_;
}

absl::Status TraceWriter::Run(Job& job) {
  switch (job.kind) {
    case Job::kRecord:
      return AppendRecord(job.type, job.framed);
    case Job::kChunk: {
      absl::Status s = EncodeChunk(job.tracks, job.events);
      for (TrackEvents& e : job.tracks) {
        // Keep the vectors' capacity for a later chunk.
        e.slices.clear();
        e.instants.clear();
        e.counters.clear();
        e.samples.clear();
        e.args.clear();
        e.flows.clear();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      spare_tracks_.reserve(spare_tracks_.size() + job.tracks.size());
      for (TrackEvents& e : job.tracks) spare_tracks_.push_back(std::move(e));
      return s;
    }
    case Job::kFlush:
      return sink_->Flush(options_.sync_on_flush);
  }
  return absl::OkStatus();
}

void TraceWriter::WorkerLoop() {
  pthread_setname_np(pthread_self(), "podscope-write");
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return !queue_.empty() || stop_worker_; });
    if (queue_.empty()) break;  // stopping, and nothing left to do
    Job job = std::move(queue_.front());
    queue_.pop_front();
    worker_busy_ = true;
    const bool failed = !worker_error_.ok();
    lock.unlock();
    // After a failure the sink's offsets are unknown: later jobs are
    // dropped, and the owner sees the first error.
    absl::Status s = failed ? absl::OkStatus() : Run(job);
    lock.lock();
    if (!s.ok() && worker_error_.ok()) worker_error_ = s;
    if (job.kind == Job::kChunk) --queued_chunks_;
    worker_busy_ = false;
    work_done_.notify_all();
  }
}

absl::Status TraceWriter::WaitForWorker() {
  if (!worker_.joinable()) return absl::OkStatus();
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [&] { return queue_.empty() && !worker_busy_; });
  return worker_error_;
}

void TraceWriter::StopWorker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_worker_ = true;
  }
  work_ready_.notify_all();
  worker_.join();
}

std::string TraceWriter::Frame(RecordType type,
                               std::string_view payload) const {
  if (options_.compression_level == 0) {
    return EncodeRecord(type, RecordEncoding::kRaw, payload);
  }
  return EncodeCompressedRecord(type, payload, options_.compression_level);
}

absl::Status TraceWriter::AppendMessage(
    RecordType type, const google::protobuf::MessageLite& message,
    bool compress) {
  std::string payload;
  if (!message.SerializeToString(&payload)) {
    return absl::InternalError(absl::StrCat(
        "cannot serialise the ", std::string(RecordTypeName(type)), " record"));
  }
  Job job;
  job.type = type;
  job.framed = compress && payload.size() >= kCompressThreshold
                   ? Frame(type, payload)
                   : EncodeRecord(type, RecordEncoding::kRaw, payload);
  return Submit(std::move(job));
}

absl::Status TraceWriter::WriteDictionaries() {
  if (pending_metadata_) {
    if (auto s = AppendMessage(RecordType::kMetadata, *pending_metadata_,
                               /*compress=*/true);
        !s.ok()) {
      return s;
    }
    pending_metadata_.reset();
  }
  if (pending_strings_.strings_size() > 0) {
    if (auto s = AppendMessage(RecordType::kStrings, pending_strings_, true);
        !s.ok()) {
      return s;
    }
    pending_strings_.Clear();
    pending_strings_.set_first_id(next_string_id_);
  }
  if (tracks_written_ < tracks_.size() || !tracks_updated_.empty()) {
    proto::TrackTable table;
    for (uint32_t id : tracks_updated_) *table.add_tracks() = tracks_[id - 1];
    tracks_updated_.clear();
    for (size_t i = tracks_written_; i < tracks_.size(); ++i) {
      *table.add_tracks() = tracks_[i];
    }
    if (auto s = AppendMessage(RecordType::kTracks, table, true); !s.ok()) {
      return s;
    }
    tracks_written_ = tracks_.size();
  }
  if (pending_stacks_.frames_size() > 0 || pending_stacks_.stacks_size() > 0) {
    if (auto s = AppendMessage(RecordType::kStacks, pending_stacks_, true);
        !s.ok()) {
      return s;
    }
    pending_stacks_.Clear();
  }
  if (pending_clock_.snapshots_size() > 0 ||
      pending_clock_.offsets_size() > 0) {
    if (auto s = AppendMessage(RecordType::kClock, pending_clock_, true);
        !s.ok()) {
      return s;
    }
    pending_clock_.Clear();
  }
  return absl::OkStatus();
}

absl::Status TraceWriter::WriteChunk() {
  if (pending_event_count_ == 0) return absl::OkStatus();
  Job job;
  job.kind = Job::kChunk;
  job.events = pending_event_count_;
  std::vector<TrackEvents> spares;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spares.swap(spare_tracks_);
  }
  job.tracks.reserve(pending_events_.size());
  for (TrackEvents& e : pending_events_) {
    if (e.empty()) {
      e.flows.clear();
      e.args.clear();
      continue;
    }
    // The events go with the job; the track keeps collecting into spare
    // vectors whose capacity an earlier chunk left.
    TrackEvents fresh;
    if (!spares.empty()) {
      fresh = std::move(spares.back());
      spares.pop_back();
    }
    fresh.track_id = e.track_id;
    std::swap(e, fresh);
    job.tracks.push_back(std::move(fresh));
  }
  if (!spares.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (TrackEvents& e : spares) spare_tracks_.push_back(std::move(e));
  }
  pending_event_count_ = 0;
  return Submit(std::move(job));
}

absl::Status TraceWriter::EncodeChunk(std::vector<TrackEvents>& tracks,
                                      uint64_t events) {
  proto::Chunk chunk;
  if (options_.packed_chunks) {
    if (!packer_) packer_ = std::make_unique<PackedChunkEncoder>();
    packer_->Reset();
  }
  proto::ChunkEntry entry;
  int64_t chunk_min = std::numeric_limits<int64_t>::max();
  int64_t chunk_max = std::numeric_limits<int64_t>::min();
  for (TrackEvents& e : tracks) {
    // Slices in end order are packed as they are when they nest.
    std::pair<int64_t, int64_t> span;
    if (!packer_ || !packer_->AddEndOrder(e, &span)) {
      ToReaderOrder(&e);
      if (packer_) {
        packer_->Add(e);
      } else {
        EncodeTrackEvents(e, chunk.add_tracks());
      }
      span = e.time_range();
    }
    const auto [lo, hi] = span;
    const uint64_t count = e.event_count();
    proto::TrackRange* range = entry.add_tracks();
    range->set_track_id(e.track_id);
    WidenTrackRange(range, lo, hi, count);
    while (track_totals_.size() < e.track_id) {
      const auto id = static_cast<uint32_t>(track_totals_.size() + 1);
      track_totals_.emplace_back().set_track_id(id);
    }
    WidenTrackRange(&track_totals_[e.track_id - 1], lo, hi, count);
    chunk_min = std::min(chunk_min, lo);
    chunk_max = std::max(chunk_max, hi);
  }
  std::string framed;
  if (packer_) {
    std::vector<std::string_view> parts;
    std::string_view bits;
    packer_->Finish(&parts, &bits);
    framed = EncodeCompressedRecordParts(RecordType::kChunk, parts, bits,
                                         options_.compression_level);
  } else {
    std::string payload;
    chunk.SerializeToString(&payload);
    framed = Frame(RecordType::kChunk, payload);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entry.set_offset(stats_.bytes);
  }
  entry.set_length(framed.size());
  entry.set_min_ns(chunk_min);
  entry.set_max_ns(chunk_max);
  entry.set_event_count(events);
  if (auto s = AppendRecord(RecordType::kChunk, framed); !s.ok()) return s;
  *index_.add_chunks() = std::move(entry);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.events += events;
  stats_.chunks += 1;
  return absl::OkStatus();
}

absl::Status TraceWriter::Flush() {
  if (closed_) {
    return absl::FailedPreconditionError("the trace writer is closed");
  }
  if (!error_.ok()) return error_;
  if (auto s = WriteDictionaries(); !s.ok()) return error_ = s;
  if (auto s = WriteChunk(); !s.ok()) return error_ = s;
  if (pending_drops_.counts_size() > 0) {
    if (auto s = AppendMessage(RecordType::kDropCounts, pending_drops_, false);
        !s.ok()) {
      return error_ = s;
    }
    pending_drops_.Clear();
  }
  Job flush;
  flush.kind = Job::kFlush;
  if (auto s = Submit(std::move(flush)); !s.ok()) return error_ = s;
  if (auto s = WaitForWorker(); !s.ok()) return error_ = s;
  return absl::OkStatus();
}

absl::Status TraceWriter::Close() {
  if (closed_) return error_;
  absl::Status s = Flush();
  // The rest is appended on this thread.
  StopWorker();
  closed_ = true;
  if (s.ok()) {
    for (const proto::TrackRange& t : track_totals_) {
      if (t.event_count() > 0) *index_.add_tracks() = t;
    }
    const WriterStats totals = stats();
    index_.set_event_count(totals.events);
    const uint64_t index_offset = totals.bytes;
    s = AppendMessage(RecordType::kIndex, index_, /*compress=*/true);
    if (s.ok()) {
      std::string trailer;
      Trailer{index_offset}.EncodeTo(&trailer);
      s = AppendRecord(RecordType::kTrailer, trailer);
    }
    if (s.ok()) s = sink_->Flush(options_.sync_on_flush);
  }
  absl::Status c = sink_->Close();
  if (s.ok()) s = c;
  error_ = s;
  return s;
}

}  // namespace podscope::trace_format
