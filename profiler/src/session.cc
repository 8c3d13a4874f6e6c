#include "podscope/profiler/session.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/trace_format/writer.h"
#include "podscope/trace_format/format.h"
#include "src/external_events.h"
#include "src/sampling_collector.h"
#include "src/session_internal.h"
#include "src/string_registry.h"
#include "src/thread_buffer.h"

namespace podscope::profiler {
namespace {

namespace tf = ::podscope::trace_format;

std::string HostName() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) return "unknown-host";
  return host;
}

std::vector<std::string> CommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  return args;
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Facts set by SetProcessInfo & co, kept across sessions.
struct ProcessFacts {
  std::mutex mutex;
  int process_index = -1;
  int process_count = 0;
  std::string session_id;
  std::vector<tf::proto::Device> devices;
  uint64_t generation = 0;  // bumped on every change
};
ProcessFacts& Facts() {
  static auto* facts = new ProcessFacts();
  return *facts;
}

class Session {
 public:
  // `owner` is 0 for a session started by StartTrace, else the token of
  // the internal caller (the profiler server) that alone may stop it.
  Session(std::string path, TraceOptions options,
          std::unique_ptr<tf::TraceWriter> writer, uint64_t owner)
      : path_(std::move(path)),
        options_(std::move(options)),
        writer_(std::move(writer)),
        owner_(owner) {}

  const std::string& path() const { return path_; }
  uint64_t owner() const { return owner_; }
  const std::string& session_id() const { return options_.session_id; }

  absl::Status Start() {
    if (options_.sampling_hz > 0) {
      auto collector = internal::SamplingCollector::Start(options_.sampling_hz);
      if (!collector.ok()) return collector.status();
      sampling_ = *std::move(collector);
      internal::BufferRegistry::Get().ForEach([&](internal::ThreadBuffer* b) {
        if (!b->exited.load(std::memory_order_acquire)) {
          sampling_->RegisterThread(b->tid);
        }
      });
    }
    calibration_ = CalibrateTicks(10);
    file_clock_ = Skewed(calibration_, skew_);
    start_ticks_ = Ticks();
    start_ns_ = calibration_.ToNs(start_ticks_);
    start_realtime_ns_ = RealtimeNs();
    writer_->AddClockSnapshot(ProfilerNowNs(), RealtimeNs());
    WriteMetadata();
    internal::BufferRegistry::Get().set_max_blocks_per_thread(
        std::max<uint32_t>(options_.max_blocks_per_thread, 1));
    // Drop counts are cumulative per thread; remember where they stood.
    internal::BufferRegistry::Get().ForEach([&](internal::ThreadBuffer* b) {
      drop_base_[b] = b->dropped.load(std::memory_order_relaxed);
    });
    external_drop_base_ = internal::ExternalEvents::Get().dropped();
    internal::ExternalEvents::Get().Clear();
    internal::g_level.store(static_cast<int>(options_.level),
                            std::memory_order_release);
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

  absl::Status Stop() {
    internal::g_level.store(0, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    sampling_.reset();
    // Scopes still open when recording stopped were not recorded; what the
    // threads committed until now is drained by the final pass in Run.
    writer_->AddClockSnapshot(ProfilerNowNs(), RealtimeNs());
    WriteMetadata();
    absl::Status s = writer_->Close();
    internal::BufferRegistry::Get().ReleaseExited();
    if (s.ok()) s = error_;
    return s;
  }

  SessionStats stats() {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    return stats_;
  }

 private:
  // Moves the threads' events into the writer 20 times per flush interval
  // (every 5 ms by default, at least every millisecond), so that their
  // blocks are recycled long before a busy thread runs out (at 10 M
  // events/s a thread fills its 256 blocks in about 50 ms), and flushes
  // the file every flush_interval. Chunks fill and go to the writer's
  // encoder between flushes.
  void Run() {
    using Clock = std::chrono::steady_clock;
    const auto drain_interval =
        std::clamp<std::chrono::steady_clock::duration>(
            options_.flush_interval / 20, std::chrono::milliseconds(1),
            options_.flush_interval);
    auto next_flush = Clock::now() + options_.flush_interval;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      const auto wake = std::min(next_flush, Clock::now() + drain_interval);
      cv_.wait_until(lock, wake, [&] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      if (Clock::now() >= next_flush) {
        Drain();
        next_flush = Clock::now() + options_.flush_interval;
      } else {
        DrainThreads();
      }
      lock.lock();
    }
    lock.unlock();
    Drain();
  }

  void WriteMetadata() {
    tf::proto::Metadata m;
    m.set_host(HostName());
    m.set_pid(getpid());
    {
      ProcessFacts& f = Facts();
      std::lock_guard<std::mutex> lock(f.mutex);
      m.set_process_index(f.process_index);
      m.set_process_count(f.process_count);
      m.set_session_id(options_.session_id.empty() ? f.session_id
                                                   : options_.session_id);
      for (const auto& d : f.devices) *m.add_devices() = d;
      facts_generation_ = f.generation;
    }
    for (const std::string& arg : CommandLine()) m.add_command_line(arg);
    m.set_start_monotonic_ns(skew_.Apply(start_ns_));
    m.set_start_realtime_ns(start_realtime_ns_);
    m.set_producer("podscope profiler 0.1.0");
    tf::proto::TscCalibration* tsc = m.mutable_tsc();
    tsc->set_tsc_base(file_clock_.tick_base);
    tsc->set_monotonic_base_ns(file_clock_.ns_base);
    tsc->set_ns_per_tick(file_clock_.ns_per_tick);
    tsc->set_invariant_tsc(calibration_.tsc);
    auto& opts = *m.mutable_capture_options();
    opts["level"] = absl::StrCat(static_cast<int>(options_.level));
    opts["flush_interval_ms"] = absl::StrCat(options_.flush_interval.count());
    opts["max_blocks_per_thread"] = absl::StrCat(options_.max_blocks_per_thread);
    opts["sampling_hz"] = absl::StrCat(options_.sampling_hz);
    opts["clock"] = calibration_.tsc ? "tsc" : "clock_gettime";
    if (skew_.active()) {
      opts["test_clock_offset_ns"] = absl::StrCat(skew_.offset_ns);
      opts["test_clock_drift_ppm"] = absl::StrCat(skew_.drift_ppm);
    }
    writer_->SetMetadata(m);
  }

  uint32_t FileString(uint32_t registry_id) {
    if (registry_id < string_map_.size() && string_map_[registry_id] != 0) {
      return string_map_[registry_id];
    }
    if (registry_id == 0) return 0;
    if (string_map_.size() <= registry_id) string_map_.resize(registry_id + 1, 0);
    const uint32_t id = writer_->InternString(
        internal::StringRegistry::Get().Lookup(registry_id));
    string_map_[registry_id] = id;
    return id;
  }

  struct ThreadTrack {
    uint32_t id = 0;
    std::string name;
  };

  uint32_t TrackFor(internal::ThreadBuffer* b) {
    std::string name;
    {
      std::lock_guard<std::mutex> lock(b->name_mutex);
      name = b->name;
    }
    if (name.empty()) name = absl::StrCat("thread ", b->tid);
    ThreadTrack& t = thread_tracks_[b];
    if (t.id != 0 && t.name == name) return t.id;
    tf::proto::Track track;
    track.set_kind(tf::proto::TRACK_KIND_THREAD);
    track.set_name(name);
    track.set_tid(b->tid);
    track.set_sort_index(b->tid == getpid() ? 0 : static_cast<int>(b->tid));
    if (t.id == 0) {
      t.id = writer_->AddTrack(track);
    } else {
      writer_->UpdateTrack(t.id, track);
    }
    t.name = name;
    return t.id;
  }

  uint32_t CounterTrack(uint32_t name_id, std::string_view unit = "") {
    uint32_t& id = counter_tracks_[name_id];
    if (id == 0) {
      tf::proto::Track track;
      track.set_kind(tf::proto::TRACK_KIND_COUNTER);
      track.set_name(std::string(internal::StringRegistry::Get().Lookup(name_id)));
      track.set_unit(std::string(unit));
      // After host threads (their tids) and device streams (1000000 + ...).
      track.set_sort_index(2000000);
      id = writer_->AddTrack(track);
    }
    return id;
  }

  // An argument as recorded (registry key, kind, value bits) in the file's
  // terms.
  tf::Arg FileArg(uint32_t key, uint8_t kind, uint64_t bits) {
    switch (kind) {
      case internal::kRecordArgDouble: {
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return {FileString(key), d};
      }
      case internal::kRecordArgString:
        return {FileString(key),
                tf::StringId{FileString(static_cast<uint32_t>(bits))}};
      default:
        return {FileString(key), static_cast<int64_t>(bits)};
    }
  }

  void AddArgs(const internal::RawEvent* e, uint32_t count,
               std::vector<tf::Arg>* args, uint64_t* flow_out,
               uint64_t* flow_in) {
    args->clear();
    for (uint32_t i = 0; i < count; ++i) {
      const internal::RawEvent& a = e[i];
      switch (a.kind) {
        case internal::kRecordArgInt:
        case internal::kRecordArgDouble:
        case internal::kRecordArgString:
          args->push_back(FileArg(a.name, a.kind, a.a));
          break;
        case internal::kRecordFlowOut: *flow_out = a.a; break;
        case internal::kRecordFlowIn: *flow_in = a.a; break;
        default: break;
      }
    }
  }

  void DrainThreads() {
    std::vector<tf::Arg> args;
    internal::BufferRegistry::Get().ForEach([&](internal::ThreadBuffer* b) {
      uint32_t track = 0;
      internal::DrainBuffer(b, [&](const internal::RawEvent* e) {
        // Events from before this session (left in a block when the last
        // one stopped) are not this capture's.
        if (static_cast<int64_t>(e->a - start_ticks_) < 0) return;
        if (track == 0) track = TrackFor(b);
        uint64_t flow_out = 0, flow_in = 0;
        switch (e->kind) {
          case internal::kRecordSlice: {
            AddArgs(e + 1, e->attachments, &args, &flow_out, &flow_in);
            const int64_t start = file_clock_.ToNs(e->a);
            const int64_t end = file_clock_.ToNs(e->b);
            tf::EventRef ref = writer_->AddSlice(track, start, end - start,
                                                 FileString(e->name), args);
            if (flow_out) writer_->AddFlow(ref, flow_out, tf::FlowPhase::kBegin);
            if (flow_in) writer_->AddFlow(ref, flow_in, tf::FlowPhase::kEnd);
            break;
          }
          case internal::kRecordInstant: {
            AddArgs(e + 1, e->attachments, &args, &flow_out, &flow_in);
            tf::EventRef ref = writer_->AddInstant(
                track, file_clock_.ToNs(e->a), FileString(e->name), args);
            if (flow_out) writer_->AddFlow(ref, flow_out, tf::FlowPhase::kBegin);
            if (flow_in) writer_->AddFlow(ref, flow_in, tf::FlowPhase::kEnd);
            break;
          }
          case internal::kRecordCounter: {
            double v;
            std::memcpy(&v, &e->b, sizeof v);
            writer_->AddCounter(CounterTrack(e->name), file_clock_.ToNs(e->a),
                                v);
            break;
          }
          default:
            break;
        }
      });
      if (track != 0) track_of_tid_[b->tid] = track;
      const uint64_t dropped =
          b->dropped.load(std::memory_order_relaxed) - drop_base_[b];
      if (dropped != 0) {
        writer_->SetDropCount(TrackFor(b), dropped);
        total_dropped_threads_[b] = dropped;
      }
    });
  }

  void DrainExternal() {
    std::vector<internal::ExternalEvent> events;
    std::vector<tf::proto::Track> tracks;
    internal::ExternalEvents::Get().Take(&events, &tracks);
    std::vector<tf::Arg> args;
    for (internal::ExternalEvent& e : events) {
      if (e.start_ns < start_ns_ || e.track == 0 || e.track > tracks.size()) {
        continue;
      }
      uint32_t& track = external_tracks_[e.track];
      if (track == 0) track = writer_->AddTrack(tracks[e.track - 1]);
      if (e.counter) {
        writer_->AddCounter(track, skew_.Apply(e.start_ns), e.value);
        continue;
      }
      args.clear();
      for (const internal::PendingArg& a : e.args) {
        args.push_back(FileArg(a.key, a.kind, a.bits));
      }
      tf::EventRef ref = writer_->AddSlice(track, skew_.Apply(e.start_ns),
                                           e.end_ns - e.start_ns,
                                           FileString(e.name), args);
      if (e.flow_in) writer_->AddFlow(ref, e.flow_in, tf::FlowPhase::kEnd);
    }
  }

  void SampleProcessCounters() {
    if (!options_.process_counters) return;
    const int64_t now = MonotonicNs();
    long pages_resident = 0;
    {
      std::ifstream statm("/proc/self/statm");
      long size = 0;
      statm >> size >> pages_resident;
    }
    timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    const int64_t cpu_ns = int64_t{cpu.tv_sec} * 1'000'000'000 + cpu.tv_nsec;
    if (rss_track_ == 0) {
      rss_track_ = CounterTrack(internal::StringRegistry::Get().Intern(
                                    "process resident memory"),
                                "bytes");
      cpu_track_ = CounterTrack(
          internal::StringRegistry::Get().Intern("process CPU use"), "%");
    }
    writer_->AddCounter(rss_track_, skew_.Apply(now),
                        static_cast<double>(pages_resident) *
                            static_cast<double>(sysconf(_SC_PAGESIZE)));
    if (last_counter_ns_ != 0 && now > last_counter_ns_) {
      writer_->AddCounter(cpu_track_, skew_.Apply(now),
                          100.0 * static_cast<double>(cpu_ns - last_cpu_ns_) /
                              static_cast<double>(now - last_counter_ns_));
    }
    last_counter_ns_ = now;
    last_cpu_ns_ = cpu_ns;
  }

  void Drain() {
    // Keep the tick-to-ns map exact as the capture goes on: the rate
    // measured over the whole capture so far.
    calibration_ = RefineCalibration(calibration_);
    file_clock_ = Skewed(calibration_, skew_);
    DrainThreads();
    DrainExternal();
    if (sampling_) {
      sampling_->Drain(writer_.get(), skew_, [&](pid_t tid) -> uint32_t {
        auto it = track_of_tid_.find(tid);
        if (it != track_of_tid_.end() && it->second != 0) return it->second;
        // A thread sampled before it recorded any event.
        uint32_t track = 0;
        internal::BufferRegistry::Get().ForEach([&](internal::ThreadBuffer* b) {
          if (b->tid == tid && track == 0) track = TrackFor(b);
        });
        track_of_tid_[tid] = track;
        return track;
      });
    }
    SampleProcessCounters();
    if (owner_ == 0) {  // remote captures measure their own offsets
      internal::DrainReferenceClockOffsets(
          &clock_cursor_, [&](const tf::proto::ClockOffset& o) {
            writer_->AddClockOffset(o);
          });
    }
    {
      std::lock_guard<std::mutex> lock(Facts().mutex);
      if (Facts().generation != facts_generation_) {
        facts_changed_ = true;
      }
    }
    if (facts_changed_) {
      WriteMetadata();
      facts_changed_ = false;
    }
    absl::Status s = writer_->Flush();
    if (!s.ok() && error_.ok()) error_ = s;
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.events = writer_->stats().events;
    stats_.bytes = writer_->stats().bytes;
    stats_.flushes += 1;
    stats_.dropped = internal::ExternalEvents::Get().dropped() -
                     external_drop_base_;
    for (const auto& [b, n] : total_dropped_threads_) stats_.dropped += n;
  }

  const std::string path_;
  const TraceOptions options_;
  std::unique_ptr<tf::TraceWriter> writer_;
  std::unique_ptr<internal::SamplingCollector> sampling_;
  absl::flat_hash_map<pid_t, uint32_t> track_of_tid_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mutex_
  absl::Status error_;

  const uint64_t owner_;
  const ClockSkew skew_ = TestClockSkew();
  TickCalibration calibration_;  // ticks to CLOCK_MONOTONIC
  TickCalibration file_clock_;   // ticks to the file's (skewed) clock
  uint64_t start_ticks_ = 0;
  int64_t start_ns_ = 0;
  int64_t start_realtime_ns_ = 0;
  uint64_t facts_generation_ = 0;
  uint64_t clock_cursor_ = internal::kClockCursorStart;
  bool facts_changed_ = false;

  std::vector<uint32_t> string_map_;
  absl::flat_hash_map<internal::ThreadBuffer*, ThreadTrack> thread_tracks_;
  absl::flat_hash_map<internal::ThreadBuffer*, uint64_t> drop_base_;
  absl::flat_hash_map<internal::ThreadBuffer*, uint64_t> total_dropped_threads_;
  uint64_t external_drop_base_ = 0;
  absl::flat_hash_map<uint32_t, uint32_t> counter_tracks_;
  absl::flat_hash_map<uint32_t, uint32_t> external_tracks_;
  uint32_t rss_track_ = 0, cpu_track_ = 0;
  int64_t last_counter_ns_ = 0, last_cpu_ns_ = 0;

  std::mutex stats_mutex_;
  SessionStats stats_;
};

std::mutex g_session_mutex;
std::unique_ptr<Session> g_session;  // guarded by g_session_mutex

}  // namespace

namespace {

// Fills in defaults that come from the environment and the process facts.
TraceOptions ResolveOptions(const TraceOptions& options) {
  TraceOptions o = options;
  if (o.session_id.empty()) {
    std::lock_guard<std::mutex> lock(Facts().mutex);
    o.session_id = Facts().session_id;
  }
  if (o.session_id.empty()) {
    if (const char* env = std::getenv("PODSCOPE_SESSION")) o.session_id = env;
  }
  return o;
}

absl::Status CheckOptions(const TraceOptions& o, const std::string& caller) {
  if (o.flush_interval.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(caller, ": flush_interval must be positive"));
  }
  if (o.compression_level < 0 || o.compression_level > 9) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": compression_level must be 0..9, not ", o.compression_level));
  }
  return absl::OkStatus();
}

// Chunks are encoded and compressed on the writer's own thread when there
// is a core for it besides the session's: the session thread then only
// moves events from the thread buffers into the writer.
tf::WriterOptions WriterOptionsFor(const TraceOptions& o) {
  tf::WriterOptions wo;
  wo.compression_level = o.compression_level;
  wo.background_thread = std::thread::hardware_concurrency() > 1;
  return wo;
}

absl::Status BusyError() {
  if (g_session->owner() != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a remote capture (session '", g_session->session_id(),
        "') is recording this process"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "a trace is already being recorded to ", g_session->path()));
}

// Starts `session` as the process's session; g_session_mutex is held.
absl::Status Install(std::unique_ptr<Session> session) {
  if (absl::Status s = session->Start(); !s.ok()) return s;
  g_session = std::move(session);
  return absl::OkStatus();
}

}  // namespace

bool IsValidSessionId(std::string_view id) {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                    c == '.' || c == ':' || c == '+';
    if (!ok) return false;
  }
  return true;
}

absl::Status StartTrace(const std::string& dir, const TraceOptions& options) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (g_session) return BusyError();
  if (dir.empty()) {
    return absl::InvalidArgumentError("StartTrace: the directory is empty");
  }
  const TraceOptions o = ResolveOptions(options);
  if (absl::Status s = CheckOptions(o, "StartTrace"); !s.ok()) return s;
  std::filesystem::path folder(dir);
  if (!o.session_id.empty()) {
    if (!IsValidSessionId(o.session_id)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "StartTrace: session id '", o.session_id,
          "' is not a valid folder name (letters, digits, '-', '_', '.', ':', "
          "'+'; at most 128)"));
    }
    folder /= o.session_id;
  }
  if (o.per_process_subdir) {
    int index;
    {
      std::lock_guard<std::mutex> facts_lock(Facts().mutex);
      index = Facts().process_index;
    }
    folder /= absl::StrCat("proc_", index >= 0 ? index : getpid());
  }
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("StartTrace: cannot create ",
                                            folder.string(), ": ", ec.message()));
  }
  const std::string path = (folder / TraceFileName()).string();
  auto writer = tf::TraceWriter::Create(path, WriterOptionsFor(o));
  if (!writer.ok()) return writer.status();
  absl::Status s = Install(
      std::make_unique<Session>(path, o, *std::move(writer), /*owner=*/0));
  if (!s.ok()) std::filesystem::remove(path, ec);
  return s;
}

absl::StatusOr<std::string> StopTrace() {
  std::unique_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(g_session_mutex);
    if (!g_session) {
      return absl::FailedPreconditionError("StopTrace: no trace is recording");
    }
    if (g_session->owner() != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "StopTrace: the running capture (session '", g_session->session_id(),
          "') was started by a remote client; it ends when that client's "
          "capture does"));
    }
    session = std::move(g_session);
  }
  const std::string path = session->path();
  if (absl::Status s = session->Stop(); !s.ok()) return s;
  return path;
}

std::string TraceFileName() {
  return absl::StrCat(HostName(), ".", getpid(), std::string(tf::kFileExtension));
}

namespace internal {

absl::Status StartOwnedSession(std::unique_ptr<tf::RecordSink> sink,
                               const TraceOptions& options,
                               const std::string& description,
                               uint64_t owner) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (g_session) return BusyError();
  const TraceOptions o = ResolveOptions(options);
  if (absl::Status s = CheckOptions(o, "capture"); !s.ok()) return s;
  auto writer = tf::TraceWriter::Create(std::move(sink), WriterOptionsFor(o));
  if (!writer.ok()) return writer.status();
  return Install(
      std::make_unique<Session>(description, o, *std::move(writer), owner));
}

absl::Status StopOwnedSession(uint64_t owner) {
  std::unique_ptr<Session> session;
  {
    std::lock_guard<std::mutex> lock(g_session_mutex);
    if (!g_session || g_session->owner() != owner) {
      return absl::NotFoundError("the capture is no longer running");
    }
    session = std::move(g_session);
  }
  return session->Stop();
}

std::string ActiveSessionId(bool* active) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  *active = g_session != nullptr;
  return g_session ? g_session->session_id() : std::string();
}

std::string HostNameForFiles() { return HostName(); }

std::string UtcSessionId(bool with_millis) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  if (!with_millis) return buf;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      now.time_since_epoch()).count() % 1000;
  char frac[8];
  std::snprintf(frac, sizeof frac, ".%03d", static_cast<int>(ms));
  return std::string(buf) + frac;
}

ProcessFactsSnapshot SnapshotProcessFacts() {
  ProcessFacts& f = Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  return {f.process_index, f.process_count, f.session_id, f.devices};
}

}  // namespace internal

bool IsTracing() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  return g_session != nullptr;
}

std::string CurrentTracePath() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  return g_session ? g_session->path() : std::string();
}

SessionStats CurrentSessionStats() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  return g_session ? g_session->stats() : SessionStats();
}

void SetProcessInfo(int process_index, int process_count) {
  ProcessFacts& f = Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.process_index = process_index;
  f.process_count = process_count;
  ++f.generation;
}

void SetSessionId(const std::string& session_id) {
  ProcessFacts& f = Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.session_id = session_id;
  ++f.generation;
}

void AddDevice(const tf::proto::Device& device) {
  ProcessFacts& f = Facts();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.devices.push_back(device);
  ++f.generation;
}

}  // namespace podscope::profiler
