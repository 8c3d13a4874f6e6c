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
      dictionary_bytes_ += framed.size();
      if (metadata_) dictionary_bytes_ -= metadata_->size();
      metadata_ = std::make_shared<const std::string>(std::move(framed));
      return;
    case tf::RecordType::kDropCounts:
      dictionary_bytes_ += framed.size();
      if (drop_counts_) dictionary_bytes_ -= drop_counts_->size();
      drop_counts_ = std::make_shared<const std::string>(std::move(framed));
      return;
    case tf::RecordType::kIndex:
    case tf::RecordType::kTrailer:
      return;  // the recorder never closes its writer
    default:
      dictionary_bytes_ += framed.size();
      dictionaries_.push_back(
          std::make_shared<const std::string>(std::move(framed)));
  }
}

void FlightRing::AdoptChunkEntries(std::vector<tf::proto::ChunkEntry> entries,
                                   int64_t opened_ns, int64_t cut_ns) {
  for (tf::proto::ChunkEntry& entry : entries) {
    auto it = std::find_if(
        unpaired_.begin(), unpaired_.end(),
        [&](const Unpaired& u) { return u.offset == entry.offset(); });
    if (it == unpaired_.end()) continue;
    Chunk c;
    c.framed = std::make_shared<const std::string>(std::move(it->framed));
    c.entry = std::move(entry);
    c.opened_ns = opened_ns;
    c.cut_ns = cut_ns;
    unpaired_.erase(it);
    chunk_bytes_ += c.framed->size();
    events_ += c.entry.event_count();
    chunks_.push_back(std::move(c));
  }
  // A chunk record without an entry cannot be indexed; none is expected.
  unpaired_.clear();
}

void FlightRing::PopOldest() {
  chunk_bytes_ -= chunks_.front().framed->size();
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

FlightRing::Snapshot FlightRing::Take(int64_t oldest_cut_ns) const {
  Snapshot snapshot;
  snapshot.header = header_;
  if (metadata_) snapshot.records.push_back(metadata_);
  snapshot.records.insert(snapshot.records.end(), dictionaries_.begin(),
                          dictionaries_.end());
  if (drop_counts_) snapshot.records.push_back(drop_counts_);
  for (const Chunk& c : chunks_) {
    if (c.cut_ns < oldest_cut_ns) continue;
    if (snapshot.chunks.empty()) snapshot.first_opened_ns = c.opened_ns;
    snapshot.chunks.emplace_back(c.framed, c.entry);
    snapshot.events += c.entry.event_count();
  }
  return snapshot;
}

std::string FlightRing::Assemble(const Snapshot& snapshot) {
  size_t size = snapshot.header.size() + tf::kTrailerRecordSize;
  for (const Record& r : snapshot.records) size += r->size();
  for (const auto& [r, entry] : snapshot.chunks) size += r->size();
  std::string out;
  out.reserve(size + 4096);
  out = snapshot.header;
  tf::proto::Index index;
  for (const Record& framed : snapshot.records) {
    tf::proto::RecordEntry* r = index.add_records();
    r->set_type(static_cast<uint32_t>(tf::PeekRecordFrame(*framed).type));
    r->set_offset(out.size());
    r->set_length(framed->size());
    out += *framed;
  }
  std::map<uint32_t, tf::proto::TrackRange> totals;
  for (const auto& [framed, entry] : snapshot.chunks) {
    tf::proto::ChunkEntry* e = index.add_chunks();
    *e = entry;
    e->set_offset(out.size());
    out += *framed;
    for (const tf::proto::TrackRange& t : entry.tracks()) {
      tf::proto::TrackRange& total = totals[t.track_id()];
      total.set_track_id(t.track_id());
      Widen(&total, t);
    }
  }
  for (const auto& [id, range] : totals) *index.add_tracks() = range;
  index.set_event_count(snapshot.events);
  const uint64_t index_offset = out.size();
  std::string payload;
  index.SerializeToString(&payload);
  out += tf::EncodeCompressedRecord(tf::RecordType::kIndex, payload, 6);
  tf::Trailer{index_offset}.EncodeTo(&out);
  return out;
}

}  // namespace podscope::profiler::internal
