// Converts the events of one Chrome trace JSON document (including PyTorch
// profiler / Kineto traces) into a TraceWriter as they are parsed: every
// (pid, tid) becomes a track (GPU streams device-stream tracks, the rest
// threads), counters counter tracks, B/E pairs and X events slices,
// instants instants, s/t/f events and Kineto's launch -> kernel
// correlations flows. Slices of one thread that overlap without nesting
// go to extra tracks ("... (overlap 2)") instead of being lost.
#ifndef PODSCOPE_TRACE_FORMAT_SRC_CHROME_CONVERT_H_
#define PODSCOPE_TRACE_FORMAT_SRC_CHROME_CONVERT_H_

#include <simdjson.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "json_stream.h"
#include "podscope/trace_format/writer.h"

namespace podscope::trace_format::json_internal {

// "12.345" microseconds (any number form JSON allows, or such a number in
// a string) to nanoseconds, exactly for up to 3 decimals; nullopt when the
// text is not a number or the result does not fit.
std::optional<int64_t> MicrosToNs(std::string_view text);

class ChromeConverter {
 public:
  // `file_index`: the file's position in its session; flow ids (which a
  // viewer matches across the files of a session) are made unique with it.
  ChromeConverter(TraceWriter* writer, JsonEventStream* in,
                  uint32_t file_index);

  // Converts the whole document. `tick` is called now and then; returning
  // false cancels.
  absl::Status Run(const std::function<bool()>& tick);

  // What the document said about itself, known after Run.
  int64_t main_pid() const { return main_pid_ == kUnset ? 0 : main_pid_; }
  int rank() const { return rank_; }              // -1 when not given
  int world_size() const { return world_size_; }  // 0 when not given
  bool is_kineto() const { return kineto_; }
  uint64_t events() const { return events_; }
  int64_t min_ts() const { return min_ts_; }
  // The NCCL kernels' ends on the device streams, for lining ranks up
  // (host_alignment.h): keyed "nccl/<collective>/<n>", the n-th kernel of
  // that collective (AllReduce, AllGather, SendRecv...) to end on this
  // rank.
  std::vector<std::pair<std::string, int64_t>> CollectiveEnds() const;
  const std::string& process_name() const { return main_process_name_; }
  // Facts for Metadata.attributes, and what was not converted as it was.
  const std::map<std::string, std::string>& attributes() const {
    return attributes_;
  }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The devices (GPUs) seen: (local id, their stream track ids).
  const std::map<int64_t, std::vector<uint32_t>>& devices() const {
    return devices_;
  }

 private:
  static constexpr int64_t kUnset = INT64_MIN;
  struct OpenSlice {
    int64_t start, end;
    uint64_t epoch;
    EventRef ref;
  };
  struct Lane {
    uint32_t track = 0;
    proto::Track desc;
    std::vector<OpenSlice> open;
  };
  struct Begin {
    int64_t ts;
    uint32_t name;
    std::vector<Arg> args;
    bool gpu;
  };
  struct PendingFlow {
    uint64_t id;
    FlowPhase phase;
  };
  struct Thread {
    int64_t pid = 0, tid = 0;
    bool device = false;
    std::vector<Lane> lanes;
    std::vector<Begin> begins;
    std::vector<PendingFlow> flows;
  };
  // One event's fields, as parsed.
  struct Event {
    char ph = 0;
    std::string_view name, cat, bp, scope, id;
    int64_t pid = 0, tid = 0;
    std::optional<int64_t> ts, dur;
    std::string_view args;  // the raw object, or empty
    size_t args_capacity = 0;
    // The args were converted into args_ while parsing (when "ph" came
    // before them), with Kineto's "correlation".
    bool args_converted = false;
    int64_t correlation = 0;
    uint64_t offset = 0;
  };

  absl::Status HandleMember(const JsonItem& item);
  absl::Status HandleEvent(const JsonItem& item);
  // Reads one member of an event object into e.
  absl::Status ReadEventField(const JsonItem& item, std::string_view key,
                              simdjson::ondemand::value v, Event* e);
  absl::Status ReadEventArgs(const JsonItem& item, simdjson::ondemand::value v,
                             Event* e);
  absl::Status Dispatch(Event& e);
  // The track of a global ("g") or process ("p") instant, made on first use.
  uint32_t SharedInstantTrack(const Event& e);
  // NCCL kernels seen on device streams: (collective, end).
  void NoteCollective(std::string_view name, int64_t end);
  std::vector<std::pair<std::string, int64_t>> nccl_ends_;
  // A complete ('X') slice, with Kineto's correlation as a flow end.
  void AddComplete(const Event& e, Thread& t, uint32_t name,
                   std::span<const Arg> args, int64_t correlation, bool gpu);
  // An 'E' closes the thread's last 'B'; one with none is kept as an
  // instant marked unclosed.
  void AddEnd(Thread& t, int64_t ts, uint32_t name, std::vector<Arg>& args);
  absl::Status ParseId(simdjson::ondemand::value v, uint64_t offset,
                       std::string_view what, int64_t* out);
  // Converts an args object; picks out Kineto's "correlation" on the way.
  absl::Status ConvertArgs(const Event& e, std::vector<Arg>* out,
                           int64_t* correlation);
  absl::Status ConvertArgObject(simdjson::ondemand::object obj, uint64_t offset,
                                std::vector<Arg>* out, int64_t* correlation);
  // Calls fn for each member of e's "args" object; "WHAT: malformed
  // \"args\"" when they are not one.
  absl::Status ForEachArg(
      const Event& e, std::string_view what,
      absl::FunctionRef<absl::Status(std::string_view key,
                                     simdjson::ondemand::value v)>
          fn);
  absl::Status HandleMetadata(const Event& e);
  absl::Status HandleCounter(const Event& e);
  absl::Status HandleFlow(const Event& e);

  Thread& GetThread(int64_t pid, int64_t tid, bool gpu_hint);
  std::string TrackName(const Thread& t, size_t lane) const;
  void Rename(int64_t pid, std::optional<int64_t> tid);
  // Places a slice on the thread's first lane it nests in; adds it.
  EventRef AddSlice(Thread& t, int64_t start, int64_t end, uint32_t name,
                    std::span<const Arg> args);
  void AttachPending(Thread& t, const EventRef& ref);
  void Count() {
    if (pending_ >= kChunkEvents) {
      pending_ = 0;
      ++epoch_;
    }
    ++pending_;
    ++events_;
  }
  void Warn(std::string what) {
    if (warnings_.size() < 100) warnings_.push_back(std::move(what));
  }
  absl::Status Finish();
  // A flow id of this file: the file's base, then the JSON's id (a Kineto
  // correlation id, say) in the low 40 bits.
  uint64_t FlowId(uint64_t id) const {
    return flow_base_ | (id & ((uint64_t{1} << 40) - 1));
  }

 public:
  // The writer's WriterOptions::chunk_events, mirrored to know when an
  // EventRef went stale.
  static constexpr size_t kChunkEvents = WriterOptions().chunk_events;

 private:
  TraceWriter* w_;
  JsonEventStream* in_;
  uint64_t flow_base_;
  simdjson::ondemand::parser parser_, args_parser_;
  std::vector<Arg> args_;  // the current event's, capacity kept

  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::unique_ptr<Thread>>
      threads_;
  absl::flat_hash_map<std::string, int64_t> string_ids_;  // string pid/tid
  absl::flat_hash_map<int64_t, std::string> id_names_;
  absl::flat_hash_map<int64_t, std::string> process_names_, labels_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, std::string> thread_names_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int> thread_sort_;
  absl::flat_hash_map<std::string, uint32_t> counter_tracks_;
  uint32_t global_track_ = 0;
  absl::flat_hash_map<int64_t, uint32_t> process_tracks_;
  absl::flat_hash_map<std::string, uint64_t> flow_ids_;
  absl::flat_hash_set<uint64_t> corr_begin_, corr_end_;
  std::map<int64_t, std::vector<uint32_t>> devices_;

  uint32_t k_category_ = 0, k_unclosed_ = 0;
  uint64_t pending_ = 0, epoch_ = 0, events_ = 0;
  int64_t main_pid_ = kUnset;
  std::string main_process_name_;
  int64_t min_ts_ = INT64_MAX, max_ts_ = INT64_MIN;
  int rank_ = -1, world_size_ = 0;
  bool kineto_ = false;
  std::map<std::string, std::string> attributes_;
  std::vector<std::string> warnings_;
  std::map<std::string, uint64_t> skipped_phases_;
  uint64_t unmatched_ends_ = 0, overlap_slices_ = 0;
};

}  // namespace podscope::trace_format::json_internal

#endif  // PODSCOPE_TRACE_FORMAT_SRC_CHROME_CONVERT_H_
