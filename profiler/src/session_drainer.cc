#include "src/session_drainer.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "podscope/base/utf8.h"
#include "src/external_events.h"
#include "src/sampling_collector.h"
#include "src/string_registry.h"

namespace podscope::profiler::internal {

namespace tf = ::podscope::trace_format;

namespace {

// A thread's track: the main thread first, the others by thread id.
tf::proto::Track ThreadTrackOf(const std::string& name, pid_t tid) {
  tf::proto::Track track;
  track.set_kind(tf::proto::TRACK_KIND_THREAD);
  track.set_name(name);
  track.set_tid(tid);
  track.set_sort_index(tid == getpid() ? 0 : static_cast<int>(tid));
  return track;
}

}  // namespace

SessionDrainer::SessionDrainer(tf::TraceWriter* writer, const ClockSkew& skew,
                               uint64_t start_ticks, int64_t start_ns)
    : writer_(writer),
      skew_(skew),
      start_ticks_(start_ticks),
      start_ns_(start_ns) {
  // Drop counts are cumulative per thread; remember where they stood.
  BufferRegistry::Get().ForEach([&](ThreadBuffer* b) {
    drop_base_[b] = b->dropped.load(std::memory_order_relaxed);
  });
}

uint32_t SessionDrainer::FileString(uint32_t registry_id) {
  if (registry_id < string_map_.size() && string_map_[registry_id] != 0) {
    return string_map_[registry_id];
  }
  if (registry_id == 0) return 0;
  if (string_map_.size() <= registry_id) string_map_.resize(registry_id + 1, 0);
  const uint32_t id =
      writer_->InternString(StringRegistry::Get().Lookup(registry_id));
  string_map_[registry_id] = id;
  return id;
}

uint32_t SessionDrainer::TrackFor(ThreadBuffer* b) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(b->name_mutex);
    name = b->name;
  }
  if (name.empty()) name = absl::StrCat("thread ", b->tid);
  ThreadTrack& t = thread_tracks_[b];
  if (t.id != 0 && t.name == name) return t.id;
  const tf::proto::Track track = ThreadTrackOf(name, b->tid);
  if (t.id == 0) {
    t.id = writer_->AddTrack(track);
  } else {
    writer_->UpdateTrack(t.id, track);
  }
  t.name = name;
  return t.id;
}

uint32_t SessionDrainer::SampledThreadTrack(pid_t tid) {
  std::string name;
  const std::string path = absl::StrCat("/proc/self/task/", tid, "/comm");
  if (FILE* f = std::fopen(path.c_str(), "re")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr) name = buf;
    std::fclose(f);
  }
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) {
    name.pop_back();
  }
  // Anyone may name a thread, with any bytes.
  name = name.empty() ? absl::StrCat("thread ", tid)
                      : absl::StrCat(base::ToValidUtf8(name), " (", tid, ")");
  return writer_->AddTrack(ThreadTrackOf(name, tid));
}

uint32_t SessionDrainer::CounterTrack(uint32_t name_id, std::string_view unit) {
  uint32_t& id = counter_tracks_[name_id];
  if (id == 0) {
    tf::proto::Track track;
    track.set_kind(tf::proto::TRACK_KIND_COUNTER);
    track.set_name(std::string(StringRegistry::Get().Lookup(name_id)));
    track.set_unit(std::string(unit));
    // After host threads (their tids) and device streams (1000000 + ...).
    track.set_sort_index(2000000);
    id = writer_->AddTrack(track);
  }
  return id;
}

// An argument as recorded (registry key, kind, value bits) in the file's
// terms.
tf::Arg SessionDrainer::FileArg(uint32_t key, uint8_t kind, uint64_t bits) {
  switch (kind) {
    case kRecordArgDouble: {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return {FileString(key), d};
    }
    case kRecordArgString:
      return {FileString(key),
              tf::StringId{FileString(static_cast<uint32_t>(bits))}};
    default:
      return {FileString(key), static_cast<int64_t>(bits)};
  }
}

void SessionDrainer::AddArgs(const RawEvent* e, uint32_t count,
                             std::vector<tf::Arg>* args, uint64_t* flow_out,
                             uint64_t* flow_in) {
  args->clear();
  for (uint32_t i = 0; i < count; ++i) {
    const RawEvent& a = e[i];
    switch (a.kind) {
      case kRecordArgInt:
      case kRecordArgDouble:
      case kRecordArgString:
        args->push_back(FileArg(a.name, a.kind, a.a));
        break;
      case kRecordFlowOut:
        *flow_out = a.a;
        break;
      case kRecordFlowIn:
        *flow_in = a.a;
        break;
      default:
        break;
    }
  }
}

void SessionDrainer::AddEvent(const RawEvent* e, uint32_t track,
                              std::vector<tf::Arg>* args) {
  uint64_t flow_out = 0, flow_in = 0;
  switch (e->kind) {
    case kRecordSlice: {
      AddArgs(e + 1, e->attachments, args, &flow_out, &flow_in);
      const int64_t start = file_clock_.ToNs(e->a);
      const int64_t end = file_clock_.ToNs(e->b);
      tf::EventRef ref = writer_->AddSlice(track, start, end - start,
                                           FileString(e->name), *args);
      if (flow_out) writer_->AddFlow(ref, flow_out, tf::FlowPhase::kBegin);
      if (flow_in) writer_->AddFlow(ref, flow_in, tf::FlowPhase::kEnd);
      break;
    }
    case kRecordInstant: {
      AddArgs(e + 1, e->attachments, args, &flow_out, &flow_in);
      tf::EventRef ref = writer_->AddInstant(track, file_clock_.ToNs(e->a),
                                             FileString(e->name), *args);
      if (flow_out) writer_->AddFlow(ref, flow_out, tf::FlowPhase::kBegin);
      if (flow_in) writer_->AddFlow(ref, flow_in, tf::FlowPhase::kEnd);
      break;
    }
    case kRecordCounter: {
      double v;
      std::memcpy(&v, &e->b, sizeof v);
      writer_->AddCounter(CounterTrack(e->name), file_clock_.ToNs(e->a), v);
      break;
    }
    default:
      break;
  }
}

void SessionDrainer::Accept(ThreadBuffer* b, const RawEvent* e, uint32_t* track,
                            std::vector<tf::Arg>* args) {
  // Events from before this session (left in a block when the last one
  // stopped, or recorded before a capture joined) are not its.
  if (static_cast<int64_t>(e->a - start_ticks_) < 0) return;
  if (e->a > end_ticks_) return;
  if (window_ && !window_->AcceptsTicks(e->a)) return;
  if (*track == 0) *track = TrackFor(b);
  AddEvent(e, *track, args);
}

void SessionDrainer::EndThread(ThreadBuffer* b, uint32_t track) {
  if (track != 0) track_of_tid_[b->tid] = track;
  // A thread born after the drainer starts from zero drops.
  auto base = drop_base_.find(b);
  const uint64_t dropped = b->dropped.load(std::memory_order_relaxed) -
                           (base == drop_base_.end() ? 0 : base->second);
  if (dropped != 0) {
    writer_->SetDropCount(TrackFor(b), dropped);
    dropped_[b] = dropped;
  }
}

void SessionDrainer::DrainThreads(SessionDrainer* also,
                                  SessionDrainer* recorder) {
  std::vector<tf::Arg> args;
  BufferRegistry::Get().ForEach([&](ThreadBuffer* b) {
    uint32_t track = 0, also_track = 0, recorder_track = 0;
    DrainBuffer(b, [&](const RawEvent* e) {
      ++records_seen_;
      Accept(b, e, &track, &args);
      if (also != nullptr) also->Accept(b, e, &also_track, &args);
      if (recorder != nullptr) {
        recorder->Accept(b, e, &recorder_track, &args);
      }
    });
    EndThread(b, track);
    if (also != nullptr) also->EndThread(b, also_track);
    if (recorder != nullptr) recorder->EndThread(b, recorder_track);
  });
}

void SessionDrainer::DrainExternal(SessionDrainer* also,
                                   SessionDrainer* recorder) {
  std::vector<ExternalEvent> events;
  std::vector<tf::proto::Track> tracks;
  ExternalEvents::Get().Take(&events, &tracks);
  AddExternal(events, tracks);
  if (also != nullptr) also->AddExternal(events, tracks);
  if (recorder != nullptr) recorder->AddExternal(events, tracks);
}

void SessionDrainer::Forget(const std::vector<ThreadBuffer*>& released) {
  for (ThreadBuffer* b : released) {
    if (auto it = dropped_.find(b); it != dropped_.end()) {
      forgotten_dropped_ += it->second;
    }
    thread_tracks_.erase(b);
    drop_base_.erase(b);
    dropped_.erase(b);
  }
}

void SessionDrainer::MapDeviceTracks(tf::proto::Metadata* m) {
  if (m->devices().empty()) return;
  const std::vector<tf::proto::Track> tracks = ExternalEvents::Get().Tracks();
  for (tf::proto::Device& d : *m->mutable_devices()) {
    for (int i = 0; i < d.stream_track_ids_size(); ++i) {
      const uint32_t handle = d.stream_track_ids(i);
      if (handle == 0 || handle > tracks.size()) continue;
      uint32_t& track = external_tracks_[handle];
      if (track == 0) track = writer_->AddTrack(tracks[handle - 1]);
      d.set_stream_track_ids(i, track);
    }
  }
}

void SessionDrainer::AddExternal(const std::vector<ExternalEvent>& events,
                                 const std::vector<tf::proto::Track>& tracks) {
  std::vector<tf::Arg> args;
  for (const ExternalEvent& e : events) {
    if (e.start_ns < start_ns_ || e.track == 0 || e.track > tracks.size() ||
        (window_ && !window_->AcceptsNs(e.start_ns))) {
      continue;
    }
    uint32_t& track = external_tracks_[e.track];
    if (track == 0) track = writer_->AddTrack(tracks[e.track - 1]);
    if (e.counter) {
      writer_->AddCounter(track, skew_.Apply(e.start_ns), e.value);
      continue;
    }
    args.clear();
    for (const PendingArg& a : e.args) {
      args.push_back(FileArg(a.key, a.kind, a.bits));
    }
    if (e.instant) {
      writer_->AddInstant(track, skew_.Apply(e.start_ns), FileString(e.name),
                          args);
      continue;
    }
    tf::EventRef ref =
        writer_->AddSlice(track, skew_.Apply(e.start_ns), e.end_ns - e.start_ns,
                          FileString(e.name), args);
    if (e.flow_in) writer_->AddFlow(ref, e.flow_in, tf::FlowPhase::kEnd);
  }
}

void SessionDrainer::DrainSamples(SamplingCollector* sampling) {
  std::function<bool(int64_t)> accept;
  if (window_) {
    // Samples follow the capture's window, as every other event does.
    accept = [this](int64_t monotonic_ns) {
      return window_->AcceptsNs(monotonic_ns);
    };
  }
  sampling->Drain(
      writer_, skew_,
      [&](pid_t tid) -> uint32_t {
        auto it = track_of_tid_.find(tid);
        if (it != track_of_tid_.end() && it->second != 0) return it->second;
        // A thread sampled before it recorded any event, or one that never
        // records (it gets a track named as the kernel names it).
        uint32_t track = 0;
        BufferRegistry::Get().ForEach([&](ThreadBuffer* b) {
          if (b->tid == tid && track == 0) track = TrackFor(b);
        });
        if (track == 0) track = SampledThreadTrack(tid);
        track_of_tid_[tid] = track;
        return track;
      },
      accept);
}

void SessionDrainer::AddCounter(std::string_view name, std::string_view unit,
                                int64_t monotonic_ns, double value) {
  if (window_ && !window_->AcceptsNs(monotonic_ns)) return;
  const uint32_t track = CounterTrack(StringRegistry::Get().Intern(name), unit);
  writer_->AddCounter(track, skew_.Apply(monotonic_ns), value);
}

uint64_t SessionDrainer::dropped_by_threads() const {
  uint64_t total = forgotten_dropped_;
  for (const auto& [b, n] : dropped_) total += n;
  return total;
}

}  // namespace podscope::profiler::internal
