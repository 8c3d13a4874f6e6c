#include "podscope/trace_format/streamed_file.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"
#include "podscope/trace_format/reader.h"
#include "podscope/trace_format/trace.pb.h"
#include "podscope/trace_format/trailer.h"
#include "track_range.h"

namespace podscope::trace_format {
absl::StatusOr<std::unique_ptr<StreamedFile>> StreamedFile::Create(
    const std::string& path) {
  PODSCOPE_ASSIGN_OR_RETURN(auto sink, OpenFileSink(path));
  return std::unique_ptr<StreamedFile>(new StreamedFile(path, std::move(sink)));
}

std::unique_ptr<StreamedFile> StreamedFile::Adopt(int fd, std::string path) {
  auto sink = AdoptFileSink(fd, path);
  return std::unique_ptr<StreamedFile>(
      new StreamedFile(std::move(path), std::move(sink)));
}

absl::Status StreamedFile::Write(std::string_view bytes) {
  absl::Status s = sink_->Append(bytes);
  if (s.ok()) offset_ += bytes.size();
  return s;
}

absl::Status StreamedFile::Append(std::string_view bytes) {
  if (!error_.ok()) return error_;
  if (finished_) {
    return absl::FailedPreconditionError("the streamed file is finished");
  }
  received_ += bytes.size();
  pending_.append(bytes);
  size_t pos = 0;
  absl::Status s;
  if (!header_done_) {
    if (pending_.size() < kFileHeaderSize) return absl::OkStatus();
    s = CheckFileHeader(std::string_view(pending_).substr(0, kFileHeaderSize),
                        "the capture stream");
    if (s.ok())
      s = Write(std::string_view(pending_).substr(0, kFileHeaderSize));
    if (!s.ok()) return error_ = s;
    header_done_ = true;
    pos = kFileHeaderSize;
  }
  size_t written_to = pos;  // records before this are on disk
  while (pending_.size() - pos >= kRecordHeaderSize) {
    const RecordFrame frame =
        PeekRecordFrame(std::string_view(pending_).substr(pos));
    if (frame.payload_length > kMaxRecordPayload) {
      return error_ = absl::DataLossError(absl::StrCat(
                 "the capture stream holds an impossible record length ",
                 frame.payload_length, " at offset ",
                 offset_ + (pos - written_to)));
    }
    const size_t size = frame.size();
    if (pending_.size() - pos < size) break;
    const RecordType type = frame.type;
    if (type == RecordType::kIndex || type == RecordType::kTrailer) {
      // Flush what precedes, then hold the index (the trailer is rebuilt).
      s = Write(
          std::string_view(pending_).substr(written_to, pos - written_to));
      if (!s.ok()) return error_ = s;
      if (type == RecordType::kIndex)
        index_record_ = pending_.substr(pos, size);
      pos += size;
      written_to = pos;
      continue;
    }
    if (type != RecordType::kChunk) {
      streamed_.push_back({type, offset_ + (pos - written_to), size});
    }
    pos += size;
  }
  s = Write(std::string_view(pending_).substr(written_to, pos - written_to));
  if (s.ok()) s = sink_->Flush(false);
  if (!s.ok()) return error_ = s;
  pending_.erase(0, pos);
  return absl::OkStatus();
}

absl::Status StreamedFile::AddRecord(
    RecordType type, const google::protobuf::MessageLite& message) {
  if (!error_.ok()) return error_;
  if (!header_done_) {
    return absl::FailedPreconditionError(
        "no trace arrived: nothing to add records to");
  }
  const std::string framed =
      EncodeCompressedRecord(type, message.SerializeAsString(), 1);
  added_.push_back({type, offset_, framed.size()});
  absl::Status s = Write(framed);
  if (s.ok()) s = sink_->Flush(false);
  if (!s.ok()) error_ = s;
  return s;
}

absl::Status StreamedFile::WriteIndexAndTrailer(std::string payload) {
  const uint64_t index_offset = offset_;
  absl::Status s =
      Write(EncodeCompressedRecord(RecordType::kIndex, payload, 1));
  if (!s.ok()) return s;
  std::string trailer;
  Trailer{index_offset}.EncodeTo(&trailer);
  return Write(trailer);
}

absl::StatusOr<proto::Index> StreamedFile::BuildIndex() {
  if (absl::Status s = sink_->Flush(false); !s.ok()) return s;
  proto::Index index;
  {
    PODSCOPE_ASSIGN_OR_RETURN(auto reader, TraceReader::Open(path_));
    const TraceReader& r = *reader;
    std::map<uint32_t, proto::TrackRange> totals;  // by track id
    uint64_t events = 0;
    for (size_t i = 0; i < r.chunks().size(); ++i) {
      auto decoded = r.DecodeChunk(i);
      if (!decoded.ok()) continue;  // reported below, with the scan's damage
      proto::ChunkEntry* entry = index.add_chunks();
      entry->set_offset(r.chunks()[i].offset);
      entry->set_length(r.chunks()[i].length);
      int64_t lo_all = std::numeric_limits<int64_t>::max();
      int64_t hi_all = std::numeric_limits<int64_t>::min();
      uint64_t count_all = 0;
      for (const TrackEvents& e : *decoded) {
        if (e.empty()) continue;
        const auto [lo, hi] = e.time_range();
        const uint64_t n = e.event_count();
        proto::TrackRange* t = entry->add_tracks();
        t->set_track_id(e.track_id);
        WidenTrackRange(t, lo, hi, n);
        proto::TrackRange& total = totals[e.track_id];
        total.set_track_id(e.track_id);
        WidenTrackRange(&total, lo, hi, n);
        lo_all = std::min(lo_all, lo);
        hi_all = std::max(hi_all, hi);
        count_all += n;
      }
      entry->set_min_ns(count_all > 0 ? lo_all : 0);
      entry->set_max_ns(count_all > 0 ? hi_all : 0);
      entry->set_event_count(count_all);
      events += count_all;
    }
    for (auto& [id, t] : totals) *index.add_tracks() = std::move(t);
    index.set_event_count(events);
    // Decoding comes first: it is what finds damaged chunks.
    damage_ = r.report().skipped;
  }
  for (const Added& a : streamed_) {
    proto::RecordEntry* e = index.add_records();
    e->set_type(static_cast<uint32_t>(a.type));
    e->set_offset(a.offset);
    e->set_length(a.length);
  }
  return index;
}

absl::Status StreamedFile::Finish(bool build_index, bool sync) {
  if (finished_) return error_;
  finished_ = true;
  absl::Status s = error_;
  proto::Index index;
  bool have_index = false;
  if (s.ok() && !index_record_.empty()) {
    // Decode the held index through the reader's own validation.
    const std::string buf = EncodeFileHeader() + index_record_;
    auto view = ReadRecordAt(buf, kFileHeaderSize);
    absl::StatusOr<std::string> payload =
        view.ok() ? DecodePayload(*view)
                  : absl::StatusOr<std::string>(view.status());
    if (!payload.ok()) {
      s = payload.status();
    } else if (!index.ParseFromString(*payload)) {
      s = absl::DataLossError("the capture stream's index does not parse");
    } else {
      have_index = true;
    }
  } else if (s.ok() && build_index && header_done_) {
    absl::StatusOr<proto::Index> built = BuildIndex();
    if (built.ok()) {
      index = *std::move(built);
      // An index over damaged records would have readers trust the file
      // whole: without one they scan it and report what was lost.
      have_index = damage_.empty();
    } else {
      s = built.status();
    }
  }
  if (s.ok() && have_index) {
    for (const Added& a : added_) {
      proto::RecordEntry* r = index.add_records();
      r->set_type(static_cast<uint32_t>(a.type));
      r->set_offset(a.offset);
      r->set_length(a.length);
    }
    s = WriteIndexAndTrailer(index.SerializeAsString());
    if (s.ok() && index_record_.empty()) index_built_ = true;
  }
  absl::Status f = sink_->Flush(sync);
  if (s.ok()) s = f;
  absl::Status c = sink_->Close();
  if (s.ok()) s = c;
  error_ = s;
  return s;
}

}  // namespace podscope::trace_format
