// Moves what the process recorded into a session's trace writer: the
// threads' buffered events, the events of libraries with their own
// timestamps (device streams, counters) and CPU stack samples. It owns the
// translation of the process's ids (interned strings, thread buffers,
// counter names) into the file's strings and tracks, and the per-thread
// drop counts. Used by the session's writer thread only; not thread-safe.
#ifndef PODSCOPE_PROFILER_SRC_SESSION_DRAINER_H_
#define PODSCOPE_PROFILER_SRC_SESSION_DRAINER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/writer.h"
#include "src/capture_window.h"
#include "src/thread_buffer.h"

namespace podscope::profiler::internal {

class SamplingCollector;
struct ExternalEvent;

class SessionDrainer {
 public:
  // Events go to `writer` (which must outlive the drainer) on the clock
  // that `skew` makes of CLOCK_MONOTONIC. Thread events stamped before
  // `start_ticks`, and external events before `start_ns` (monotonic), are
  // left from an earlier session and skipped. Drop counts are counted
  // from what the threads had dropped when the drainer was made.
  SessionDrainer(trace_format::TraceWriter* writer, const ClockSkew& skew,
                 uint64_t start_ticks, int64_t start_ns);
  SessionDrainer(const SessionDrainer&) = delete;
  SessionDrainer& operator=(const SessionDrainer&) = delete;

  // The map from ticks to the file's nanoseconds, refined as the session
  // goes on.
  void set_file_clock(const TickCalibration& file_clock) {
    file_clock_ = file_clock;
  }

  // Moves every thread's committed events into the writer, and hands each
  // to `also` (a capture's drainer sharing the session) and `recorder`
  // (the flight recorder's); either may be null. The caller holds
  // BufferDrainMutex().
  void DrainThreads(SessionDrainer* also = nullptr,
                    SessionDrainer* recorder = nullptr);
  // Moves the events recorded with their own timestamps (to `also` and
  // `recorder` too).
  void DrainExternal(SessionDrainer* also = nullptr,
                     SessionDrainer* recorder = nullptr);

  // Thread events that started after `ticks` are not this drainer's (a
  // session that stopped while the flight recorder goes on recording).
  void set_end_ticks(uint64_t ticks) { end_ticks_ = ticks; }
  // Only the events inside `window` are this drainer's (a capture asked
  // for a scheduled start or a window of steps).
  void set_window(std::shared_ptr<const CaptureWindow> window) {
    window_ = std::move(window);
  }

  // Forgets thread buffers that were freed, so that a buffer allocated at
  // the same address later is not taken for them.
  void Forget(const std::vector<ThreadBuffer*>& released);
  // Writes the stack samples taken so far onto their threads' tracks.
  void DrainSamples(SamplingCollector* sampling);

  // Adds a value to the counter track named `name` (created on first use)
  // at monotonic time `monotonic_ns`.
  void AddCounter(std::string_view name, std::string_view unit,
                  int64_t monotonic_ns, double value);

  // The metadata's device stream tracks are recorder track handles
  // (recorder.h); this turns them into the file's track ids, adding the
  // tracks that have no event yet, so `stream_track_ids` name tracks of
  // the file.
  void MapDeviceTracks(trace_format::proto::Metadata* metadata);

  // Events dropped by full thread buffers since the drainer was made.
  uint64_t dropped_by_threads() const;
  // Thread records DrainThreads has seen so far (also the ones before the
  // session's start, which it skips).
  uint64_t records_seen() const { return records_seen_; }

 private:
  uint64_t records_seen_ = 0;
  struct ThreadTrack {
    uint32_t id = 0;
    std::string name;
  };

  uint32_t FileString(uint32_t registry_id);
  uint32_t TrackFor(ThreadBuffer* b);
  // The track of a sampled thread that has no buffer (it never recorded).
  uint32_t SampledThreadTrack(pid_t tid);
  uint32_t CounterTrack(uint32_t name_id, std::string_view unit = "");
  trace_format::Arg FileArg(uint32_t key, uint8_t kind, uint64_t bits);
  void AddArgs(const RawEvent* e, uint32_t count,
               std::vector<trace_format::Arg>* args, uint64_t* flow_out,
               uint64_t* flow_in);
  void AddEvent(const RawEvent* e, uint32_t track,
                std::vector<trace_format::Arg>* args);
  // One event of thread `b` (its track made on first use, in *track).
  void Accept(ThreadBuffer* b, const RawEvent* e, uint32_t* track,
              std::vector<trace_format::Arg>* args);
  // After a pass over thread `b`: its track and drop count.
  void EndThread(ThreadBuffer* b, uint32_t track);
  void AddExternal(const std::vector<ExternalEvent>& events,
                   const std::vector<trace_format::proto::Track>& tracks);

  trace_format::TraceWriter* const writer_;
  const ClockSkew skew_;
  const uint64_t start_ticks_;
  uint64_t end_ticks_ = UINT64_MAX;
  const int64_t start_ns_;
  std::shared_ptr<const CaptureWindow> window_;
  TickCalibration file_clock_;

  std::vector<uint32_t> string_map_;  // registry id -> file string id
  absl::flat_hash_map<ThreadBuffer*, ThreadTrack> thread_tracks_;
  absl::flat_hash_map<pid_t, uint32_t> track_of_tid_;
  absl::flat_hash_map<ThreadBuffer*, uint64_t> drop_base_;
  absl::flat_hash_map<ThreadBuffer*, uint64_t> dropped_;
  uint64_t forgotten_dropped_ = 0;  // of buffers forgotten since
  absl::flat_hash_map<uint32_t, uint32_t> counter_tracks_;
  absl::flat_hash_map<uint32_t, uint32_t> external_tracks_;
};

}  // namespace podscope::profiler::internal

#endif  // PODSCOPE_PROFILER_SRC_SESSION_DRAINER_H_
