// Converts the events of one track between the in-memory form and the
// columnar protobuf form stored in chunks (see trace.proto, TrackEvents).
#ifndef PODSCOPE_TRACE_FORMAT_CHUNK_CODEC_H_
#define PODSCOPE_TRACE_FORMAT_CHUNK_CODEC_H_

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "podscope/base/coding.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

// Puts `events` in reader order (SliceOrder for slices, time order for the
// rest, argument and flow indices remapped to match). Slices that arrive in
// end order (as a recorder produces them: children before parents) are
// reordered in linear time.
void SortTrackEvents(TrackEvents* events);

// Encodes `events`, which must be in reader order (see SortTrackEvents).
void EncodeTrackEvents(const TrackEvents& events, proto::TrackEvents* out);

// Decodes one track's columns. Slice depths are relative to the slices of
// this chunk. Malformed columns (mismatched lengths, indices out of range)
// are a DataLoss error naming the column.
absl::Status DecodeTrackEvents(const proto::TrackEvents& in,
                               TrackEvents* events);

// The same from a serialised TrackEvents, reading the packed columns in
// place (the reader's fast path); any valid encoding is accepted.
absl::Status DecodeTrackEventsBytes(std::string_view bytes,
                                    TrackEvents* events);

// Decodes a chunk payload, packed or a serialised Chunk: one TrackEvents
// per track. The TrackEvents already in `out` may be filled again with
// their allocations kept (packed chunks do), so decoding chunk after chunk
// into one vector allocates once.
absl::Status DecodeChunkBytes(std::string_view bytes,
                              std::vector<TrackEvents>* out);

// ------------------------------------------------- packed chunks (1.1)

// The layout version in the second byte of a packed chunk the writer
// writes: 2 since format 1.2 (exact small time deltas); layout 1, format
// 1.1's, is still read.
inline constexpr uint8_t kPackedChunkLayout = 2;

// Writes the events of many tracks as one packed chunk (see
// docs/trace-format.md, "Packed chunks"): Add each track (in reader
// order, see SortTrackEvents), then Finish. Reuses its buffers across
// chunks; Reset before the next one. `layout` 1 writes format 1.1's
// layout (for readers older than 1.2, and tests); any other value the
// current one.
class PackedChunkEncoder {
 public:
  explicit PackedChunkEncoder(uint8_t layout = kPackedChunkLayout);
  ~PackedChunkEncoder();
  PackedChunkEncoder(const PackedChunkEncoder&) = delete;
  PackedChunkEncoder& operator=(const PackedChunkEncoder&) = delete;

  void Add(const TrackEvents& events);
  // Adds a track whose slices are in end order (each after the slices
  // nested in it, as a recorder emits them) without putting them in
  // reader order first: the bytes Add writes for them in reader order (a
  // slice before the slices nested in it, also when their times are
  // equal). False, with nothing added and `events` unchanged, when it does
  // not take them (the slices do not nest or are already in reader order,
  // or another column is out of order): then put them in reader order and
  // Add. On success the argument and flow indices of `events` refer to
  // slices in reader order, while the slices stay in end order. On
  // success, a non-null `time_range` receives events.time_range().
  bool AddEndOrder(TrackEvents& events,
                   std::pair<int64_t, int64_t>* time_range = nullptr);
  // The chunk's bytes: the concatenation of `compressible` then `bits`
  // (views into the encoder, valid until Reset).
  void Finish(std::vector<std::string_view>* compressible,
              std::string_view* bits);
  void Reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// True when a chunk payload is in the packed layout (its first byte is 0,
// which never starts a protobuf Chunk).
bool IsPackedChunk(std::string_view bytes);
absl::Status DecodePackedChunk(std::string_view bytes,
                               std::vector<TrackEvents>* out);

// True when every counter value is a whole number that an int64 holds
// exactly (base::IsIntegral), so both encodings may store the values as
// integer deltas; true when there are no counters.
inline bool CountersAreIntegral(const std::vector<CounterSample>& counters) {
  return base::AllIntegral(counters,
                           [](const CounterSample& c) { return c.value; });
}

// The reader's nesting rule, one slice at a time in SliceOrder: a slice
// that ends before the next one ends is closed (one that overlaps without
// nesting too, so depth stays bounded); the depth is how many stay open.
class SliceDepths {
 public:
  uint32_t Next(const Slice& s) {
    const int64_t end = s.end_ns();
    while (!open_ends_.empty() && open_ends_.back() < end)
      open_ends_.pop_back();
    const auto depth = static_cast<uint32_t>(open_ends_.size());
    open_ends_.push_back(end);
    return depth;
  }

 private:
  std::vector<int64_t> open_ends_;
};

// Sets each slice's depth from nesting (SliceDepths); `slices` must be in
// SliceOrder.
void ComputeSliceDepths(std::vector<Slice>* slices);

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_CHUNK_CODEC_H_
