#include "src/flight_ring.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/trailer.h"

namespace podscope::profiler::internal {

namespace tf = ::podscope::trace_format;

namespace {

class RingSink : public tf::RecordSink {
 public:
  explicit RingSink(FlightRing* ring) : ring_(ring) {}
  absl::Status Append(std::string_view bytes) override {
    return ring_->Append(bytes);
  }
  absl::Status Flush(bool) override { return absl::OkStatus(); }
  absl::Status Close() override { return absl::OkStatus(); }

 private:
  FlightRing* const ring_;
};

void Widen(tf::proto::TrackRange* range, const tf::proto::TrackRange& more) {
  if (range->event_count() == 0) {
    range->set_min_ns(more.min_ns());
    range->set_max_ns(more.max_ns());
  } else {
    range->set_min_ns(std::min(range->min_ns(), more.min_ns()));
    range->set_max_ns(std::max(range->max_ns(), more.max_ns()));
  }
  range->set_event_count(range->event_count() + more.event_count());
}

}  // namespace

std::unique_ptr<tf::RecordSink> FlightRing::MakeSink() {
  return std::make_unique<RingSink>(this);
}

absl::Status FlightRing::Append(std::string_view bytes) {
  if (header_.size() < tf::kFileHeaderSize) {
    const size_t take =
        std::min(bytes.size(), tf::kFileHeaderSize - header_.size());
    header_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
  }
  // The writer appends whole records; a split one is put back together all
  // the same.
  partial_.append(bytes);
  size_t pos = 0;
  while (partial_.size() - pos >= tf::kRecordHeaderSize) {
    const tf::RecordFrame frame = tf::PeekRecordFrame(
        std::string_view(partial_).substr(pos, tf::kRecordHeaderSize));
    if (frame.payload_length > tf::kMaxRecordPayload) {
      return absl::DataLossError(absl::StrCat(
          "flight recorder: the trace writer appended a record of ",
          frame.payload_length, " bytes"));
    }
    if (partial_.size() - pos < frame.size()) break;
    AddRecord(partial_.substr(pos, frame.size()), next_offset_);
    pos += frame.size();
    next_offset_ += frame.size();
  }
  partial_.erase(0, pos);
  return absl::OkStatus();
}

void FlightRing::AddRecord(std::string framed, uint64_t offset) {
  const tf::RecordType type = tf::PeekRecordFrame(framed).type;
  switch (type) {
    case tf::RecordType::kChunk:
      unpaired_.push_back({offset, std::move(framed)});
      return;
    case tf::RecordType::kMetadata:
      dictionary_bytes_ += framed.size() - metadata_.size();
      metadata_ = std::move(framed);
      return;
    case tf::RecordType::kDropCounts:
      dictionary_bytes_ += framed.size() - drop_counts_.size();
      drop_counts_ = std::move(framed);
      return;
    case tf::RecordType::kIndex:
    case tf::RecordType::kTrailer:
      return;  // the recorder never closes its writer
    default:
      dictionary_bytes_ += framed.size();
      dictionaries_.push_back(std::move(framed));
  }
}

void FlightRing::AdoptChunkEntries(std::vector<tf::proto::ChunkEntry> entries,
                                   int64_t cut_ns) {
  for (tf::proto::ChunkEntry& entry : entries) {
    auto it = std::find_if(
        unpaired_.begin(), unpaired_.end(),
        [&](const Unpaired& u) { return u.offset == entry.offset(); });
    if (it == unpaired_.end()) continue;
    Chunk c;
    c.framed = std::move(it->framed);
    c.entry = std::move(entry);
    c.cut_ns = cut_ns;
    unpaired_.erase(it);
    chunk_bytes_ += c.framed.size();
    events_ += c.entry.event_count();
    chunks_.push_back(std::move(c));
  }
  // A chunk record without an entry cannot be indexed; none is expected.
  unpaired_.clear();
}

void FlightRing::PopOldest() {
  chunk_bytes_ -= chunks_.front().framed.size();
  events_ -= chunks_.front().entry.event_count();
  chunks_.pop_front();
}

void FlightRing::Evict(int64_t oldest_cut_ns) {
  while (!chunks_.empty() && chunks_.front().cut_ns < oldest_cut_ns) {
    PopOldest();
  }
  while (!chunks_.empty() && bytes() > max_bytes_) {
    ++dropped_chunks_;
    dropped_events_ += chunks_.front().entry.event_count();
    PopOldest();
  }
}

std::string FlightRing::Assemble(int64_t oldest_cut_ns, Assembled* what) const {
  std::string out = header_;
  tf::proto::Index index;
  auto add_record = [&](const std::string& framed) {
    if (framed.empty()) return;
    tf::proto::RecordEntry* r = index.add_records();
    r->set_type(static_cast<uint32_t>(tf::PeekRecordFrame(framed).type));
    r->set_offset(out.size());
    r->set_length(framed.size());
    out += framed;
  };
  add_record(metadata_);
  for (const std::string& framed : dictionaries_) add_record(framed);
  add_record(drop_counts_);
  std::map<uint32_t, tf::proto::TrackRange> totals;
  *what = {};
  for (const Chunk& c : chunks_) {
    if (c.cut_ns < oldest_cut_ns) continue;
    if (what->chunks == 0) what->first_cut_ns = c.cut_ns;
    tf::proto::ChunkEntry* entry = index.add_chunks();
    *entry = c.entry;
    entry->set_offset(out.size());
    out += c.framed;
    for (const tf::proto::TrackRange& t : c.entry.tracks()) {
      tf::proto::TrackRange& total = totals[t.track_id()];
      total.set_track_id(t.track_id());
      Widen(&total, t);
    }
    what->events += c.entry.event_count();
    what->chunks += 1;
  }
  for (const auto& [id, range] : totals) *index.add_tracks() = range;
  index.set_event_count(what->events);
  const uint64_t index_offset = out.size();
  std::string payload;
  index.SerializeToString(&payload);
  out += tf::EncodeCompressedRecord(tf::RecordType::kIndex, payload, 6);
  tf::Trailer{index_offset}.EncodeTo(&out);
  return out;
}

}  // namespace podscope::profiler::internal
