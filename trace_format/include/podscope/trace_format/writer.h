// Writes a Podscope trace file as the capture goes: records are appended on
// every Flush, so a process that dies loses only what it had not flushed;
// Close appends the index that readers use for random access.
//
// A TraceWriter is not thread-safe: one thread (a session's writer thread,
// say) owns it. (With WriterOptions::background_thread it runs a worker
// thread of its own, invisible to the owner.)
#ifndef PODSCOPE_TRACE_FORMAT_WRITER_H_
#define PODSCOPE_TRACE_FORMAT_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/trace_format/chunk_codec.h"
#include "podscope/trace_format/events.h"
#include "podscope/trace_format/record_io.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::trace_format {

struct WriterOptions {
  // Compression of chunks: 1 (the default) Huffman-codes each section of
  // a packed chunk with a table of its own (standard deflate, written by
  // the writer itself, several times faster than zlib); 2 to 9 are zlib
  // levels; 0 stores records uncompressed.
  int compression_level = 1;
  // Pending events that make the writer encode a chunk on its own.
  size_t chunk_events = 1 << 16;
  // Packed chunks (format 1.1, the default); false writes the protobuf
  // `Chunk` of format 1.0, for readers older than 1.1.
  bool packed_chunks = true;
  // Sorts, encodes, compresses and appends chunks on a thread of the
  // writer's own, so that the caller only collects events: a pipeline of
  // two threads (a profiler session uses it when the machine has a spare
  // core). Flush and Close wait for it; the caller never sees the worker
  // otherwise. At most `max_queued_chunks` chunks wait for it, after which
  // adding events blocks until one is written.
  bool background_thread = false;
  size_t max_queued_chunks = 4;
  // fdatasync on every Flush (durable against power loss, not only against
  // the process dying).
  bool sync_on_flush = false;
};

// Refers to an event just added, to attach flows to it.
struct EventRef {
  uint32_t track_id = 0;
  EventKind kind = EventKind::kSlice;
  uint32_t index = 0;  // position among the track's pending events
};

struct WriterStats {
  uint64_t events = 0;
  uint64_t chunks = 0;
  uint64_t bytes = 0;  // written to the sink so far, header included
};

class TraceWriter {
 public:
  // Creates (truncates) the file at `path`.
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Create(
      const std::string& path, const WriterOptions& options = {});
  // Writes into any sink (memory, a network stream).
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Create(
      std::unique_ptr<RecordSink> sink, const WriterOptions& options = {});

  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Replaces the file's metadata; written at the next Flush. May be called
  // again when facts change (a later record replaces an earlier one).
  void SetMetadata(const proto::Metadata& metadata);

  // Returns the id of `s`, interning it on first use. Id 0 is "".
  uint32_t InternString(std::string_view s);

  // Adds a track; the writer assigns and returns its id (ignoring
  // track.id()).
  uint32_t AddTrack(const proto::Track& track);
  // Replaces track `id`'s description (a thread renamed, say); written at
  // the next Flush, and readers keep the latest.
  void UpdateTrack(uint32_t id, const proto::Track& track);

  // Stack frames and stacks for samples; ids are assigned by the writer.
  uint32_t AddFrame(const proto::Frame& frame);
  uint32_t AddStack(std::span<const uint32_t> frame_ids_leaf_first);

  void AddClockSnapshot(int64_t monotonic_ns, int64_t realtime_ns);
  void AddClockOffset(const proto::ClockOffset& offset);

  // Cumulative events dropped on `track_id` so far.
  void SetDropCount(uint32_t track_id, uint64_t dropped_events);

  // Events, in any order within a track (a recorder adds slices in end
  // order). Negative durations are clamped to 0.
  [[gnu::always_inline]] EventRef AddSlice(uint32_t track_id, int64_t start_ns,
                                           int64_t duration_ns, uint32_t name,
                                           std::span<const Arg> args = {}) {
    // The common case inline: a known track, no arguments, no chunk to
    // cut first.
    if (pending_event_count_ < options_.chunk_events &&
        track_id - 1 < pending_events_.size() && args.empty()) {
      TrackEvents& e = pending_events_[track_id - 1];
      const auto index = static_cast<uint32_t>(e.slices.size());
      e.slices.push_back(
          {start_ns, duration_ns < 0 ? 0 : duration_ns, name, 0});
      ++pending_event_count_;
      return {e.track_id, EventKind::kSlice, index};
    }
    return AddSliceSlow(track_id, start_ns, duration_ns, name, args);
  }
  EventRef AddInstant(uint32_t track_id, int64_t ts_ns, uint32_t name,
                      std::span<const Arg> args = {});
  void AddCounter(uint32_t track_id, int64_t ts_ns, double value);
  void AddSample(uint32_t track_id, int64_t ts_ns, uint32_t stack_id);
  void AddFlow(const EventRef& event, uint64_t flow_id, FlowPhase phase);

  // Appends everything pending as records and hands them to the kernel.
  absl::Status Flush();
  // Flushes, then appends the index and the trailer. Idempotent.
  absl::Status Close();

  // Counts of what reached the sink so far.
  WriterStats stats() const;

  // Moves out the index entries of the chunks appended so far (their
  // offsets count from the sink's first byte) and forgets the other
  // records' entries, so that a writer that is never closed keeps no index
  // that grows with time: for a caller that assembles files from the
  // records itself (the profiler's flight recorder). After this, Close
  // writes an index of the later chunks only. Without background_thread
  // only, between calls that add events.
  void TakeChunkEntries(std::vector<proto::ChunkEntry>* chunks);
  bool closed() const { return closed_; }

 private:
  TraceWriter(std::unique_ptr<RecordSink> sink, const WriterOptions& options);

  // A unit of work for the sink, in file order: a framed record, a chunk
  // to encode, or a flush of the sink.
  struct Job {
    enum Kind { kRecord, kChunk, kFlush } kind = kRecord;
    RecordType type = RecordType::kMetadata;
    std::string framed;
    std::vector<TrackEvents> tracks;  // kChunk: the non-empty tracks
    uint64_t events = 0;
  };

  EventRef AddSliceSlow(uint32_t track_id, int64_t start_ns,
                        int64_t duration_ns, uint32_t name,
                        std::span<const Arg> args);
  TrackEvents& Pending(uint32_t track_id);
  std::string Frame(RecordType type, std::string_view payload) const;
  // Appends now, or queues for the worker (which then owns the sink).
  absl::Status Submit(Job job);
  absl::Status Run(Job& job);  // on the worker, or inline without one
  void WorkerLoop();
  // Waits until the worker has done every queued job; its first error.
  absl::Status WaitForWorker();
  void StopWorker();
  absl::Status EncodeChunk(std::vector<TrackEvents>& tracks, uint64_t events);
  absl::Status AppendRecord(RecordType type, const std::string& framed);
  absl::Status AppendMessage(RecordType type,
                             const google::protobuf::MessageLite& message,
                             bool compress);
  absl::Status WriteDictionaries();
  absl::Status WriteChunk();
  void MaybeWriteChunk();

  std::unique_ptr<RecordSink> sink_;
  WriterOptions options_;
  absl::Status error_;  // the first failure; later calls report it
  bool closed_ = false;
  WriterStats stats_;

  absl::flat_hash_map<std::string, uint32_t> string_ids_;
  uint32_t next_string_id_ = 1;
  proto::StringTable pending_strings_;

  std::vector<proto::Track> tracks_;  // all tracks, by id - 1
  size_t tracks_written_ = 0;
  std::vector<uint32_t> tracks_updated_;
  proto::StackTable pending_stacks_;
  uint32_t next_frame_id_ = 1;
  uint32_t next_stack_id_ = 1;
  proto::ClockRecord pending_clock_;
  proto::DropCounts pending_drops_;
  std::unique_ptr<proto::Metadata> pending_metadata_;

  std::vector<TrackEvents> pending_events_;  // by track id - 1
  uint32_t track_zero_ = 0;  // holds events added with track id 0
  size_t pending_event_count_ = 0;

  // State of whoever appends (the worker while it runs): the index, per
  // track totals by track id - 1, the chunk encoder.
  proto::Index index_;
  std::vector<proto::TrackRange> track_totals_;
  std::unique_ptr<PackedChunkEncoder> packer_;

  std::thread worker_;
  mutable std::mutex mutex_;  // guards the fields below and stats_
  std::condition_variable work_ready_, work_done_;
  std::deque<Job> queue_;
  size_t queued_chunks_ = 0;
  bool worker_busy_ = false;
  bool stop_worker_ = false;
  absl::Status worker_error_;
  std::vector<TrackEvents> spare_tracks_;  // emptied, capacity kept
};

}  // namespace podscope::trace_format

#endif  // PODSCOPE_TRACE_FORMAT_WRITER_H_
