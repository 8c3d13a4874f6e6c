#include "podscope/trace_format/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "podscope/base/parallel.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/chunk_codec.h"
#include "podscope/trace_format/trailer.h"
#include "skipped_ranges.h"
#include "string_index.h"

namespace podscope::trace_format {
namespace {

template <typename Message>
absl::Status ParseBytes(const RecordView& record, std::string_view bytes,
                        Message* message) {
  if (!message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrFormat(
        "%s record at offset %d: payload is not a valid %s message",
        RecordTypeName(record.type), record.offset, message->GetTypeName()));
  }
  return absl::OkStatus();
}

template <typename Message>
absl::Status ParsePayload(const RecordView& record, Message* message) {
  PODSCOPE_ASSIGN_OR_RETURN(auto payload, OpenPayload(record));
  return ParseBytes(record, payload.view(), message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(
    const std::string& path, const ReaderOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg =
        absl::StrCat("cannot open ", path, ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg)
                         : absl::PermissionDeniedError(msg);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file"));
  }
  std::unique_ptr<TraceReader> reader(new TraceReader());
  reader->name_ = path;
  const size_t size = static_cast<size_t>(st.st_size);
  if (size > 0) {
    void* m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return absl::InternalError(
          absl::StrCat("cannot map ", path, ": ", std::strerror(err)));
    }
    reader->mapping_ = m;
    reader->mapping_size_ = size;
    reader->data_ = std::string_view(static_cast<const char*>(m), size);
  }
  ::close(fd);
  if (auto s = reader->Load(options); !s.ok()) return s;
  return reader;
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::OpenBuffer(
    std::string data, std::string name, const ReaderOptions& options) {
  std::unique_ptr<TraceReader> reader(new TraceReader());
  reader->name_ = std::move(name);
  reader->owned_ = std::move(data);
  reader->data_ = reader->owned_;
  if (auto s = reader->Load(options); !s.ok()) return s;
  return reader;
}

TraceReader::~TraceReader() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_size_);
}

absl::Status TraceReader::Load(const ReaderOptions& options) {
  if (auto s = CheckFileHeader(data_, name_); !s.ok()) return s;
  report_.file_bytes = data_.size();
  strings_ = std::make_unique<StringIndex>();
  metadata_.set_process_index(-1);
  std::string problem;
  if (!options.verify_all && LoadFromIndex(&problem)) {
    report_.has_index = true;
    report_.index_used = true;
  } else {
    report_.index_problem = problem;
    LoadByScanning();
  }
  strings_->Finish();
  chunk_failed_.assign(chunks_.size(), false);
  ranges_learned_.assign(chunks_.size(), false);
  return absl::OkStatus();
}

bool TraceReader::LoadFromIndex(std::string* problem) {
  Trailer trailer;
  if (!trailer.ReadFromEnd(data_).ok()) {
    return false;  // no trailer: the writer did not close the file
  }
  const uint64_t index_offset = trailer.index_offset;
  auto index_record = ReadRecordAt(data_, index_offset);
  proto::Index index;
  absl::Status s = index_record.status();
  if (s.ok() && index_record->type != RecordType::kIndex) {
    s = absl::DataLossError("the trailer does not point at an index record");
  }
  if (s.ok()) s = ParsePayload(*index_record, &index);
  // Chunks are only read when asked for; an entry that cannot be a record
  // of this file means the index cannot be trusted at all.
  for (int i = 0; s.ok() && i < index.chunks_size(); ++i) {
    const proto::ChunkEntry& entry = index.chunks(i);
    if (entry.offset() < kFileHeaderSize ||
        entry.length() < kRecordHeaderSize || entry.offset() > index_offset ||
        entry.length() > index_offset - entry.offset()) {
      s = absl::DataLossError(absl::StrCat(
          "index entry of chunk ", i, " (offset ", entry.offset(), ", ",
          entry.length(), " bytes) lies outside the records before the index"));
    }
  }
  for (const proto::RecordEntry& entry : index.records()) {
    if (!s.ok()) break;
    auto record = ReadRecordAt(data_, entry.offset());
    s = record.status();
    if (s.ok()) s = ApplyRecord(*record);
  }
  if (!s.ok()) {
    *problem = std::string(s.message());
    // Start over from a clean state for the scan.
    metadata_ = proto::Metadata();
    metadata_.set_process_index(-1);
    tracks_.clear();
    track_by_id_.clear();
    strings_->Clear();
    clock_.Clear();
    frames_.clear();
    stacks_.clear();
    drops_.clear();
    return false;
  }
  report_.records = index.records_size() + index.chunks_size() + 2;
  for (const proto::ChunkEntry& entry : index.chunks()) {
    ChunkInfo& c = chunks_.emplace_back();
    c.offset = entry.offset();
    c.length = entry.length();
    c.ranges_known = true;
    c.min_ns = entry.min_ns();
    c.max_ns = entry.max_ns();
    c.event_count = entry.event_count();
    c.tracks.assign(entry.tracks().begin(), entry.tracks().end());
  }
  return true;
}

void TraceReader::LoadByScanning() {
  chunks_scanned_ = true;
  RecordScanner scanner(data_);
  RecordView record;
  // An index alone does not make a closed file: a file cut between the
  // index and the trailer, or whose trailer is damaged, was not closed
  // properly, so has_index waits for a trailer at the end that points at
  // an index seen in the scan.
  uint64_t index_offset = ~uint64_t{0};
  while (scanner.Next(&record)) {
    ++report_.records;
    if (record.type == RecordType::kChunk) {
      ChunkInfo& c = chunks_.emplace_back();
      c.offset = record.offset;
      c.length = record.size();
      continue;
    }
    if (record.type == RecordType::kIndex) {
      index_offset = record.offset;
      continue;
    }
    if (record.type == RecordType::kTrailer) {
      Trailer trailer;
      if (trailer.DecodeFrom(record).ok() &&
          record.offset + record.size() == data_.size() &&
          trailer.index_offset == index_offset) {
        report_.has_index = true;
      }
      continue;
    }
    if (absl::Status s = ApplyRecord(record); !s.ok()) {
      // In file order, so a run of unusable records becomes one range at
      // the end of the list.
      AddSkippedRange(&report_.skipped,
                      {record.offset, record.size(), std::string(s.message())});
    }
  }
  for (const SkippedRange& r : scanner.skipped()) report_.skipped.push_back(r);
  report_.scan_crc_bytes = scanner.crc_bytes();
  MergeSkippedRanges(&report_.skipped);
}

absl::Status TraceReader::ApplyRecord(const RecordView& record) {
  switch (record.type) {
    case RecordType::kMetadata: {
      proto::Metadata m;
      if (auto s = ParsePayload(record, &m); !s.ok()) return s;
      metadata_ = std::move(m);
      return absl::OkStatus();
    }
    case RecordType::kStrings:
      return ApplyStrings(record);
    case RecordType::kTracks: {
      proto::TrackTable table;
      if (auto s = ParsePayload(record, &table); !s.ok()) return s;
      for (proto::Track& t : *table.mutable_tracks()) {
        auto it = track_by_id_.find(t.id());
        if (it != track_by_id_.end()) {
          tracks_[it->second] = std::move(t);
        } else {
          track_by_id_[t.id()] = tracks_.size();
          tracks_.push_back(std::move(t));
        }
      }
      return absl::OkStatus();
    }
    case RecordType::kStacks: {
      proto::StackTable table;
      if (auto s = ParsePayload(record, &table); !s.ok()) return s;
      for (proto::Frame& f : *table.mutable_frames()) {
        frames_[f.id()] = std::move(f);
      }
      for (proto::Stack& st : *table.mutable_stacks()) {
        stacks_[st.id()] = std::move(st);
      }
      return absl::OkStatus();
    }
    case RecordType::kClock: {
      proto::ClockRecord c;
      if (auto s = ParsePayload(record, &c); !s.ok()) return s;
      clock_.MergeFrom(c);
      return absl::OkStatus();
    }
    case RecordType::kDropCounts: {
      proto::DropCounts d;
      if (auto s = ParsePayload(record, &d); !s.ok()) return s;
      for (const proto::DropCount& c : d.counts()) {
        uint64_t& v = drops_[c.track_id()];
        v = std::max(v, c.dropped_events());
      }
      return absl::OkStatus();
    }
    default:
      return absl::DataLossError(absl::StrFormat(
          "record at offset %d: a %s record is not expected here",
          record.offset, RecordTypeName(record.type)));
  }
}

absl::Status TraceReader::ApplyStrings(const RecordView& record) {
  PODSCOPE_ASSIGN_OR_RETURN(auto payload, OpenPayload(record));
  auto starts_at_zero = [&] {
    return absl::DataLossError(absl::StrFormat(
        "strings record at offset %d starts at id 0", record.offset));
  };
  // Read in place, without a copy of each string, unless the payload takes
  // protobuf to judge.
  StringTableView view;
  if (view.Parse(payload.view())) {
    if (view.first_id() == 0) return starts_at_zero();
    return strings_->Add(record.offset, view.first_id(), view.count(),
                         view.bytes(),
                         [&](const auto& put) { view.ForEach(put); });
  }
  proto::StringTable table;
  if (auto s = ParseBytes(record, payload.view(), &table); !s.ok()) return s;
  if (table.first_id() == 0) return starts_at_zero();
  uint64_t bytes = 0;
  for (const std::string& str : table.strings()) bytes += str.size();
  return strings_->Add(record.offset, table.first_id(), table.strings_size(),
                       bytes, [&](const auto& put) {
                         for (const std::string& str : table.strings()) {
                           put(str);
                         }
                       });
}

size_t TraceReader::string_count() const { return strings_->table_size(); }

const proto::Track* TraceReader::FindTrack(uint32_t id) const {
  auto it = track_by_id_.find(id);
  return it == track_by_id_.end() ? nullptr : &tracks_[it->second];
}

std::string_view TraceReader::GetString(uint32_t id) const {
  return strings_->Find(id).value_or("<lost string>");
}

const proto::Frame* TraceReader::FindFrame(uint32_t id) const {
  auto it = frames_.find(id);
  return it == frames_.end() ? nullptr : &it->second;
}

const proto::Stack* TraceReader::FindStack(uint32_t id) const {
  auto it = stacks_.find(id);
  return it == stacks_.end() ? nullptr : &it->second;
}

uint64_t TraceReader::total_dropped() const {
  uint64_t total = 0;
  for (const auto& [track, n] : drops_) total += n;
  return total;
}

uint64_t TraceReader::known_event_count() const {
  uint64_t total = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < chunks_.size(); ++i) {
    if (chunks_[i].ranges_known) {
      total += chunks_[i].event_count;
    }
  }
  for (const auto& [chunk, ranges] : learned_ranges_) {
    for (const proto::TrackRange& r : ranges) total += r.event_count();
  }
  return total;
}

RecoveryReport TraceReader::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  RecoveryReport out = report_;
  for (SkippedRange& r : out.skipped) r.reason = DescribeSkipped(r);
  return out;
}

void TraceReader::AddSkipped(SkippedRange range) const {
  // A range is reported as the part of the file it covers.
  range.offset = std::min<uint64_t>(range.offset, data_.size());
  range.bytes = std::min<uint64_t>(range.bytes, data_.size() - range.offset);
  std::lock_guard<std::mutex> lock(mutex_);
  AddSkippedRange(&report_.skipped, std::move(range));
}

absl::StatusOr<std::vector<TrackEvents>> TraceReader::DecodeChunk(
    size_t i) const {
  std::vector<TrackEvents> out;
  Payload payload;
  PODSCOPE_RETURN_IF_ERROR(DecodeChunkInto(i, &out, &payload));
  return out;
}

absl::Status TraceReader::DecodeChunkInto(size_t i,
                                          std::vector<TrackEvents>* out,
                                          Payload* payload) const {
  if (i >= chunks_.size()) {
    return absl::OutOfRangeError(absl::StrFormat(
        "%s: chunk %d does not exist (%d chunks)", name_, i, chunks_.size()));
  }
  const ChunkInfo& info = chunks_[i];
  auto fail = [&](const absl::Status& s) -> absl::Status {
    out->clear();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (chunk_failed_[i]) return s;
      chunk_failed_[i] = true;
    }
    AddSkipped({info.offset, info.length,
                absl::StrCat("chunk ", i, ": ", s.message())});
    return s;
  };
  // The scan CRC-checked every chunk it found (`podscope check` decodes
  // them all right after); a chunk found through the index is checked now.
  absl::StatusOr<RecordView> record;
  if (chunks_scanned_) {
    record = RecordView{
        info.offset, RecordType::kChunk,
        static_cast<RecordEncoding>(data_[info.offset + kRecordHeaderSize - 1]),
        data_.substr(info.offset + kRecordHeaderSize,
                     info.length - kRecordHeaderSize)};
  } else {
    record = ReadRecordAt(data_, info.offset);
  }
  if (!record.ok()) return fail(record.status());
  if (record->type != RecordType::kChunk) {
    return fail(absl::DataLossError("the index points at a non-chunk record"));
  }
  if (auto s = OpenPayloadInto(*record, payload); !s.ok()) return fail(s);
  if (auto s = DecodeChunkBytes(payload->view(), out); !s.ok()) {
    return fail(s);
  }
  if (!info.ranges_known) {
    std::vector<proto::TrackRange> ranges;
    for (const TrackEvents& e : *out) {
      if (e.empty()) continue;
      const auto [lo, hi] = e.time_range();
      proto::TrackRange& r = ranges.emplace_back();
      r.set_track_id(e.track_id);
      r.set_min_ns(lo);
      r.set_max_ns(hi);
      r.set_event_count(e.event_count());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ranges.empty()) learned_ranges_[i] = std::move(ranges);
    ranges_learned_[i] = true;
  }
  return absl::OkStatus();
}

void TraceReader::ForEachChunk(
    int threads,
    const std::function<void(size_t, std::vector<TrackEvents>&)>& fn) const {
  // Each worker decodes into vectors of its own, used again chunk after
  // chunk (unless `fn` moves the events away).
  struct Scratch {
    std::vector<TrackEvents> tracks;
    Payload payload;
  };
  std::mutex mutex;
  std::vector<std::unique_ptr<Scratch>> idle;
  base::ParallelFor(threads, chunks_.size(), [&](size_t i) {
    std::unique_ptr<Scratch> scratch;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!idle.empty()) {
        scratch = std::move(idle.back());
        idle.pop_back();
      }
    }
    if (scratch == nullptr) scratch = std::make_unique<Scratch>();
    if (DecodeChunkInto(i, &scratch->tracks, &scratch->payload).ok()) {
      fn(i, scratch->tracks);
    }
    std::lock_guard<std::mutex> lock(mutex);
    idle.push_back(std::move(scratch));
  });
}

bool TraceReader::ChunkMayHold(size_t i, uint32_t track_id, int64_t t0,
                               int64_t t1) const {
  const std::vector<proto::TrackRange>* ranges = &chunks_[i].tracks;
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (!chunks_[i].ranges_known) {
    lock.lock();
    if (!ranges_learned_[i]) return true;
    auto it = learned_ranges_.find(i);
    if (it == learned_ranges_.end()) return false;  // no events
    ranges = &it->second;
  }
  for (const proto::TrackRange& r : *ranges) {
    if (r.track_id() == track_id) return r.max_ns() >= t0 && r.min_ns() <= t1;
  }
  return false;
}

TrackEvents TraceReader::ReadTrack(uint32_t track_id, int64_t t0_ns,
                                   int64_t t1_ns) const {
  std::vector<TrackEvents> parts;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    if (!ChunkMayHold(i, track_id, t0_ns, t1_ns)) continue;
    auto decoded = DecodeChunk(i);
    if (!decoded.ok()) continue;
    for (TrackEvents& e : *decoded) {
      if (e.track_id == track_id) parts.push_back(std::move(e));
    }
  }
  TrackEvents merged = MergeTrackEvents(std::move(parts));
  merged.track_id = track_id;
  if (t0_ns == std::numeric_limits<int64_t>::min() &&
      t1_ns == std::numeric_limits<int64_t>::max()) {
    return merged;
  }
  return FilterTrackEvents(merged, t0_ns, t1_ns);
}

std::vector<TrackEvents> TraceReader::ReadAllTracks(int threads) const {
  std::vector<std::vector<TrackEvents>> decoded(chunks_.size());
  ForEachChunk(threads, [&](size_t i, std::vector<TrackEvents>& tracks) {
    decoded[i] = std::move(tracks);
  });
  absl::flat_hash_map<uint32_t, std::vector<TrackEvents>> by_track;
  for (auto& chunk : decoded) {
    for (TrackEvents& e : chunk) by_track[e.track_id].push_back(std::move(e));
  }
  std::vector<uint32_t> ids;
  for (const proto::Track& t : tracks_) ids.push_back(t.id());
  for (const auto& [id, parts] : by_track) {
    if (!track_by_id_.contains(id)) ids.push_back(id);
  }
  std::vector<TrackEvents> out(ids.size());
  base::ParallelFor(threads, ids.size(), [&](size_t i) {
    auto it = by_track.find(ids[i]);
    if (it != by_track.end()) out[i] = MergeTrackEvents(std::move(it->second));
    out[i].track_id = ids[i];
  });
  return out;
}

TrackEvents MergeTrackEvents(std::vector<TrackEvents> parts) {
  if (parts.empty()) return {};
  if (parts.size() == 1) {
    ComputeSliceDepths(&parts[0].slices);
    return std::move(parts[0]);
  }
  TrackEvents out;
  out.track_id = parts[0].track_id;
  for (TrackEvents& p : parts) {
    const uint32_t slice_base = static_cast<uint32_t>(out.slices.size());
    const uint32_t instant_base = static_cast<uint32_t>(out.instants.size());
    auto base = [&](EventKind k) {
      return k == EventKind::kSlice ? slice_base : instant_base;
    };
    for (EventArgs& a : p.args) {
      a.index += base(a.kind);
      out.args.push_back(std::move(a));
    }
    for (FlowLink& f : p.flows) {
      f.index += base(f.kind);
      out.flows.push_back(f);
    }
    out.slices.insert(out.slices.end(), p.slices.begin(), p.slices.end());
    out.instants.insert(out.instants.end(), p.instants.begin(),
                        p.instants.end());
    out.counters.insert(out.counters.end(), p.counters.begin(),
                        p.counters.end());
    out.samples.insert(out.samples.end(), p.samples.begin(), p.samples.end());
  }
  SortTrackEvents(&out);
  ComputeSliceDepths(&out.slices);
  return out;
}

TrackEvents FilterTrackEvents(const TrackEvents& events, int64_t t0_ns,
                              int64_t t1_ns) {
  TrackEvents out;
  out.track_id = events.track_id;
  std::vector<uint32_t> slice_map(events.slices.size(), ~0u);
  std::vector<uint32_t> instant_map(events.instants.size(), ~0u);
  for (size_t i = 0; i < events.slices.size(); ++i) {
    const Slice& s = events.slices[i];
    if (s.end_ns() < t0_ns || s.start_ns > t1_ns) continue;
    slice_map[i] = static_cast<uint32_t>(out.slices.size());
    out.slices.push_back(s);
  }
  for (size_t i = 0; i < events.instants.size(); ++i) {
    const Instant& e = events.instants[i];
    if (e.ts_ns < t0_ns || e.ts_ns > t1_ns) continue;
    instant_map[i] = static_cast<uint32_t>(out.instants.size());
    out.instants.push_back(e);
  }
  for (const CounterSample& c : events.counters) {
    if (c.ts_ns >= t0_ns && c.ts_ns <= t1_ns) out.counters.push_back(c);
  }
  for (const StackSample& s : events.samples) {
    if (s.ts_ns >= t0_ns && s.ts_ns <= t1_ns) out.samples.push_back(s);
  }
  auto mapped = [&](EventKind kind, uint32_t index) {
    const auto& map = kind == EventKind::kSlice ? slice_map : instant_map;
    return index < map.size() ? map[index] : ~0u;
  };
  for (const EventArgs& a : events.args) {
    const uint32_t index = mapped(a.kind, a.index);
    if (index == ~0u) continue;
    EventArgs copy = a;
    copy.index = index;
    out.args.push_back(std::move(copy));
  }
  for (const FlowLink& f : events.flows) {
    const uint32_t index = mapped(f.kind, f.index);
    if (index == ~0u) continue;
    FlowLink copy = f;
    copy.index = index;
    out.flows.push_back(copy);
  }
  return out;
}

absl::StatusOr<OpenedTraces> OpenTraces(const std::string& path,
                                        const ReaderOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(
             path, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && it->path().extension() == kFileExtension) {
        files.push_back(it->path().string());
      }
    }
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot list ", path, ": ", ec.message()));
    }
    if (files.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "no *", std::string(kFileExtension), " files under ", path));
    }
  } else if (fs::exists(path, ec)) {
    files.push_back(path);
  } else {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or folder"));
  }
  std::sort(files.begin(), files.end());
  OpenedTraces opened;
  for (const std::string& f : files) {
    auto reader = TraceReader::Open(f, options);
    if (reader.ok()) {
      opened.readers.push_back(*std::move(reader));
    } else {
      opened.failures.emplace_back(f, reader.status());
    }
  }
  return opened;
}

}  // namespace podscope::trace_format
