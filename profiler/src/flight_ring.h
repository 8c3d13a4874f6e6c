// The flight recorder's memory: the records a TraceWriter appends, kept as
// a trace file without its oldest chunks. Dictionaries (strings, tracks,
// stacks, clock records) are kept for the recorder's life, since any kept
// chunk may name them; of the metadata and drop counts, which each record
// whole, only the latest. Chunks carry the time they were cut and are
// dropped, oldest first, when older than the window or beyond the byte
// bound. Take shares the kept records (no copy) and Assemble writes them,
// without the lock, as a closed file: header, dictionaries, chunks, an
// index of their new offsets, trailer. Not thread-safe: the recorder's
// lock guards it.
#ifndef PODSCOPE_PROFILER_SRC_FLIGHT_RING_H_
#define PODSCOPE_PROFILER_SRC_FLIGHT_RING_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler::internal {

class FlightRing {
 public:
  explicit FlightRing(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // A sink for the writer whose records this ring keeps; the ring must
  // outlive it.
  std::unique_ptr<trace_format::RecordSink> MakeSink();

  // Bytes as the writer appends them (the file header, then whole
  // records). DataLoss when the writer's output is not made of records.
  absl::Status Append(std::string_view bytes);

  // Pairs the writer's index entries of the chunks it appended since the
  // last call with their records, stamped as cut at `cut_ns` and holding
  // what was recorded since `opened_ns`.
  void AdoptChunkEntries(std::vector<trace_format::proto::ChunkEntry> entries,
                         int64_t opened_ns, int64_t cut_ns);

  // Drops chunks cut before `oldest_cut_ns`, then the oldest while the
  // ring holds more than its bound (those are counted as dropped).
  void Evict(int64_t oldest_cut_ns);

  using Record = std::shared_ptr<const std::string>;
  struct Snapshot {
    std::string header;
    std::vector<Record> records;  // metadata, dictionaries, drop counts
    std::vector<std::pair<Record, trace_format::proto::ChunkEntry>> chunks;
    uint64_t events = 0;
    int64_t first_opened_ns = 0;  // of the oldest chunk taken
  };
  // The kept records, with the chunks cut at or after `oldest_cut_ns`.
  Snapshot Take(int64_t oldest_cut_ns) const;
  // The snapshot as one closed file.
  static std::string Assemble(const Snapshot& snapshot);

  uint64_t bytes() const { return dictionary_bytes_ + chunk_bytes_; }
  uint64_t chunks() const { return chunks_.size(); }
  uint64_t events() const { return events_; }
  uint64_t dropped_chunks() const { return dropped_chunks_; }
  uint64_t dropped_events() const { return dropped_events_; }

 private:
  struct Chunk {
    Record framed;
    trace_format::proto::ChunkEntry entry;
    int64_t opened_ns = 0;
    int64_t cut_ns = 0;
  };
  struct Unpaired {
    uint64_t offset = 0;  // in the writer's stream
    std::string framed;
  };
  // `offset`: where the writer's stream has the record.
  void AddRecord(std::string framed, uint64_t offset);
  void PopOldest();

  const uint64_t max_bytes_;
  std::string header_;
  std::string partial_;  // a record not yet appended whole
  // The writer's offset of the record partial_ starts with.
  uint64_t next_offset_ = trace_format::kFileHeaderSize;
  std::vector<Record> dictionaries_;
  Record metadata_, drop_counts_;
  uint64_t dictionary_bytes_ = 0;
  std::vector<Unpaired> unpaired_;
  std::deque<Chunk> chunks_;
  uint64_t chunk_bytes_ = 0;
  uint64_t events_ = 0;
  uint64_t dropped_chunks_ = 0;
  uint64_t dropped_events_ = 0;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_FLIGHT_RING_H_
