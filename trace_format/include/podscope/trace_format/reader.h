// Reads a Podscope trace file. A closed file is opened through its index
// (dictionaries loaded directly, chunks decoded on demand); a file whose
// writer died is scanned record by record, and every intact record before
// and after any damage is used. What could not be read is reported, never
// hidden.
#ifndef PODSCOPE_TRACE_FORMAT_READER_H_
#define PODSCOPE_TRACE_FORMAT_READER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

class StringIndex;

struct ReaderOptions {
  // Scan and CRC-check every record even when the file has an index (what
  // `podscope check` does). Otherwise an intact index is trusted and chunks
  // are checked when they are decoded.
  bool verify_all = false;
};

struct ChunkInfo {
  uint64_t offset = 0;
  uint64_t length = 0;
  // Time range and per-track ranges; known from the index, or after the
  // chunk was decoded once for an unindexed file.
  bool ranges_known = false;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  uint64_t event_count = 0;
  std::vector<proto::TrackRange> tracks;
};

struct RecoveryReport {
  uint64_t file_bytes = 0;
  uint64_t records = 0;
  // The file was closed properly: it ends with an index and a trailer.
  bool has_index = false;
  // The index was used to open the file.
  bool index_used = false;
  // Why an index that exists could not be used (empty when it could).
  std::string index_problem;
  // Byte ranges that held no intact record, and records or chunks that were
  // intact on disk but could not be decoded, by offset; damage that touches
  // other damage is one range (SkippedRange::count), so a run of a million
  // bad records costs one entry.
  std::vector<SkippedRange> skipped;
  // Bytes the scan ran through the CRC (zero when the index was used): the
  // work a damaged file cost, bounded by docs/trace-format.md "Recovery".
  uint64_t scan_crc_bytes = 0;
  bool intact() const { return has_index && skipped.empty(); }
  uint64_t skipped_bytes() const;
  // What happened to the file, in the words every tool shows (`podscope
  // check`, `podscope summary`, the viewer's banner): "intact" or, joined
  // by "; ", "not closed: no index, read by scanning" or "index unusable
  // (WHY), read by scanning", and "N bytes skipped in K damaged ranges
  // (SIZE of FILE SIZE)".
  std::string Describe() const;
};

class TraceReader {
 public:
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(
      const std::string& path, const ReaderOptions& options = {});
  // Reads from memory; `name` is used in messages.
  static absl::StatusOr<std::unique_ptr<TraceReader>> OpenBuffer(
      std::string data, std::string name, const ReaderOptions& options = {});

  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::string& name() const { return name_; }
  const proto::Metadata& metadata() const { return metadata_; }
  const std::vector<proto::Track>& tracks() const { return tracks_; }
  const proto::Track* FindTrack(uint32_t id) const;
  // The string with id `id`; "<lost string>" when the string table that
  // held it was lost to damage (or the id is out of range).
  std::string_view GetString(uint32_t id) const;
  // Ids below this are held in one table. A damaged or crafted file can
  // also give strings ids far beyond the strings it holds: those are kept
  // apart (GetString finds them) rather than making the table that large.
  size_t string_count() const;
  const proto::ClockRecord& clock() const { return clock_; }
  const proto::Frame* FindFrame(uint32_t id) const;
  const proto::Stack* FindStack(uint32_t id) const;
  const absl::flat_hash_map<uint32_t, uint64_t>& drop_counts() const {
    return drops_;
  }
  uint64_t total_dropped() const;

  const std::vector<ChunkInfo>& chunks() const { return chunks_; }
  // Events in the index, or in decoded chunks for an unindexed file.
  uint64_t known_event_count() const;

  // What was skipped so far, including chunks that failed to decode.
  RecoveryReport report() const;

  // Decodes chunk `i`. Thread-safe. A damaged chunk is an error and is
  // added to the report.
  absl::StatusOr<std::vector<TrackEvents>> DecodeChunk(size_t i) const;
  // The same into `out`, whose TrackEvents (and `payload`'s buffer, which
  // holds the inflated chunk meanwhile) are used again where they are large
  // enough, so that a loop over the chunks allocates once. On error `out`
  // holds no meaningful events.
  absl::Status DecodeChunkInto(size_t i, std::vector<TrackEvents>* out,
                               Payload* payload) const;

  // Decodes every chunk on `threads` threads (0: all cores), calling `fn`
  // from those threads concurrently. Damaged chunks are skipped and
  // reported.
  void ForEachChunk(
      int threads,
      const std::function<void(size_t chunk, std::vector<TrackEvents>&)>& fn)
      const;

  // The events of one track that overlap [t0_ns, t1_ns], merged across
  // chunks, in reader order with slice depths. Chunks outside the range are
  // not decoded when their ranges are known.
  TrackEvents ReadTrack(
      uint32_t track_id, int64_t t0_ns = std::numeric_limits<int64_t>::min(),
      int64_t t1_ns = std::numeric_limits<int64_t>::max()) const;

  // Every track's events, merged, decoding chunks on `threads` threads.
  std::vector<TrackEvents> ReadAllTracks(int threads = 0) const;

 private:
  TraceReader() = default;
  absl::Status Load(const ReaderOptions& options);
  bool LoadFromIndex(std::string* problem);
  void LoadByScanning();
  absl::Status ApplyRecord(const RecordView& record);
  void AddSkipped(SkippedRange range) const;

  std::string name_;
  std::string owned_;  // OpenBuffer's data
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
  std::string_view data_;

  proto::Metadata metadata_;
  std::vector<proto::Track> tracks_;
  absl::flat_hash_map<uint32_t, size_t> track_by_id_;
  absl::Status ApplyStrings(const RecordView& record);
  std::unique_ptr<StringIndex> strings_;
  proto::ClockRecord clock_;
  absl::flat_hash_map<uint32_t, proto::Frame> frames_;
  absl::flat_hash_map<uint32_t, proto::Stack> stacks_;
  absl::flat_hash_map<uint32_t, uint64_t> drops_;
  std::vector<ChunkInfo> chunks_;
  // The chunks were found by the scan, which checked their CRCs.
  bool chunks_scanned_ = false;

  mutable std::mutex mutex_;
  mutable RecoveryReport report_;           // guarded by mutex_ after Open
  mutable std::vector<bool> chunk_failed_;  // guarded by mutex_
  // Per-track ranges of chunks of an unindexed file, learned when they are
  // first decoded, so later time-range reads skip them; kept only for
  // chunks that held events, so that a file of many tiny chunks costs a
  // bit for each.
  mutable absl::flat_hash_map<size_t, std::vector<proto::TrackRange>>
      learned_ranges_;
  mutable std::vector<bool> ranges_learned_;  // both guarded by mutex_
  // Whether chunk i may hold events of `track_id` in [t0, t1].
  bool ChunkMayHold(size_t i, uint32_t track_id, int64_t t0, int64_t t1) const;
};

// Concatenates parts of one track (e.g. from several chunks) into reader
// order, remapping argument and flow indices, and computes slice depths.
TrackEvents MergeTrackEvents(std::vector<TrackEvents> parts);

// The events of `events` that overlap [t0_ns, t1_ns], with their arguments
// and flows.
TrackEvents FilterTrackEvents(const TrackEvents& events, int64_t t0_ns,
                              int64_t t1_ns);

// Opens every *.podtrace file under `path` (a file or a folder, searched
// recursively), sorted by path. Files that fail to open are returned as
// errors beside the readers that worked.
struct OpenedTraces {
  std::vector<std::unique_ptr<TraceReader>> readers;
  std::vector<std::pair<std::string, absl::Status>> failures;
};
absl::StatusOr<OpenedTraces> OpenTraces(const std::string& path,
                                        const ReaderOptions& options = {});

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_READER_H_
