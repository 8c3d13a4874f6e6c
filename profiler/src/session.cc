// The session lifecycle: StartTrace / StopTrace and the sessions the
// profiler server starts, the writer thread's drain and flush passes, and
// captures that share a running session (session_tap.h).
#include "podscope/profiler/session.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/profiler/flight_recorder.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/writer.h"
#include "src/external_events.h"
#include "src/flight_recorder_internal.h"
#include "src/process_counters.h"
#include "src/sampling_collector.h"
#include "src/session_drainer.h"
#include "src/session_internal.h"
#include "src/session_metadata.h"
#include "src/session_tap.h"
#include "src/thread_buffer.h"

namespace podscope::profiler {
namespace {

namespace tf = ::podscope::trace_format;
using internal::CaptureTap;
using internal::RealtimeNs;

// Chunks are encoded and compressed on the writer's own thread when there
// is a core for it besides the session's: the session thread then only
// moves events from the thread buffers into the writer.
tf::WriterOptions WriterOptionsFor(const TraceOptions& o) {
  tf::WriterOptions wo;
  wo.compression_level = o.compression_level;
  wo.background_thread = std::thread::hardware_concurrency() > 1;
  return wo;
}

class Session {
 public:
  // `owner` is 0 for a session started by StartTrace, else the token of
  // the internal caller (the profiler server) that alone may stop it.
  Session(std::string path, TraceOptions options,
          std::unique_ptr<tf::TraceWriter> writer, uint64_t owner,
          internal::CaptureExtras extras = {})
      : path_(std::move(path)),
        options_(std::move(options)),
        writer_(std::move(writer)),
        owner_(owner),
        extras_(std::move(extras)),
        skew_(options_.clock ? options_.clock->skew() : ProcessClock().skew()) {
  }

  const std::string& path() const { return path_; }
  uint64_t owner() const { return owner_; }
  const std::string& session_id() const { return options_.session_id; }

  absl::Status Start() {
    // From here on the flight recorder leaves the threads' buffers to this
    // session: it neither drains nor frees them while the session walks
    // them.
    internal::SessionDrainStarts();
    if (options_.sampling_hz > 0) {
      auto collector = internal::SamplingCollector::Start(options_.sampling_hz);
      if (!collector.ok()) {
        internal::SessionDrainEnds();
        return collector.status();
      }
      sampling_ = *std::move(collector);
      internal::BufferRegistry::Get().ForEach([&](internal::ThreadBuffer* b) {
        if (!b->exited.load(std::memory_order_acquire)) {
          sampling_->RegisterThread(b->tid);
        }
      });
    }
    clock_.skew = skew_;
    clock_.calibration = CalibrateTicks(10);
    const uint64_t start_ticks = Ticks();
    clock_.start_ns = clock_.calibration.ToNs(start_ticks);
    clock_.start_realtime_ns = RealtimeNs();
    drainer_ = std::make_unique<internal::SessionDrainer>(
        writer_.get(), skew_, start_ticks, clock_.start_ns);
    drainer_->set_file_clock(Skewed(clock_.calibration, skew_));
    drainer_->set_window(extras_.window);
    writer_->AddClockSnapshot(skew_.Apply(MonotonicNs()), RealtimeNs());
    for (const tf::proto::ClockOffset& o : extras_.clock_offsets) {
      writer_->AddClockOffset(o);
    }
    WriteMetadata();
    internal::BufferRegistry::Get().set_max_blocks_per_thread(
        std::max<uint32_t>(options_.max_blocks_per_thread, 1));
    internal::BufferRegistry::Get().set_max_blocks_total(
        std::max<uint32_t>(options_.max_blocks_total, 1));
    internal::BufferRegistry::Get().Prefault();
    internal::BufferRegistry::Get().StartStocking();
    external_drop_base_ = internal::ExternalEvents::Get().dropped();
    // Unless the flight recorder runs and still wants them.
    if (!FlightRecorderRunning()) internal::ExternalEvents::Get().Clear();
    internal::SetSessionLevel(static_cast<int>(options_.level));
    thread_ = std::thread([this] { Run(); });
    return absl::OkStatus();
  }

  // Stops recording and closes the file. A capture sharing the session
  // ends with it; its status is returned in `*tap_status` (with its owner
  // in `*tap_owner`, 0 when there was none).
  absl::Status Stop(uint64_t* tap_owner, absl::Status* tap_status) {
    internal::SetSessionLevel(0);
    {
      // The flight recorder may keep the threads recording: what starts
      // from now on is not this session's.
      std::lock_guard<std::mutex> drain(drain_mutex_);
      drainer_->set_end_ticks(Ticks());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    internal::BufferRegistry::Get().StopStocking();
    sampling_.reset();
    *tap_owner = 0;
    {
      std::lock_guard<std::mutex> drain(drain_mutex_);
      if (tap_) {
        *tap_owner = tap_->owner();
        *tap_status = tap_->Close();
        tap_.reset();
      }
    }
    // Scopes still open when recording stopped were not recorded; what the
    // threads committed until now is drained by the final pass in Run.
    writer_->AddClockSnapshot(skew_.Apply(MonotonicNs()), RealtimeNs());
    WriteMetadata();
    absl::Status s = writer_->Close();
    internal::BufferRegistry::Get().TrimPools();
    internal::SessionDrainEnds();
    if (s.ok()) s = error_;
    return s;
  }

  // A capture shares this session from now on: it records at least at its
  // own level (the session's level is raised while it runs when it asks
  // for more), with a sampler of its own when it asks for samples and the
  // session takes none.
  absl::Status AttachTap(uint64_t owner, const TraceOptions& options,
                         std::unique_ptr<tf::TraceWriter> writer,
                         const internal::CaptureExtras& extras) {
    std::lock_guard<std::mutex> drain(drain_mutex_);
    if (tap_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a remote capture already shares the trace recorded to ", path_));
    }
    PODSCOPE_ASSIGN_OR_RETURN(
        auto tap, CaptureTap::Start(owner, options, std::move(writer), skew_,
                                    clock_.calibration,
                                    options.sampling_hz > 0 && !sampling_));
    tap->drainer()->set_window(extras.window);
    tap_ = std::move(tap);
    internal::SetSessionLevel(std::max(static_cast<int>(options_.level),
                                       static_cast<int>(options.level)));
    return absl::OkStatus();
  }

  bool HasTap(uint64_t owner) {
    std::lock_guard<std::mutex> drain(drain_mutex_);
    return tap_ && tap_->owner() == owner;
  }
  // The capture sharing this session (0: none).
  uint64_t TapOwner() {
    std::lock_guard<std::mutex> drain(drain_mutex_);
    return tap_ ? tap_->owner() : 0;
  }

  // Ends the capture `owner`: what the threads committed until now goes
  // into its file, which is closed. NotFound when it is not attached.
  absl::Status DetachTap(uint64_t owner) {
    std::lock_guard<std::mutex> drain(drain_mutex_);
    if (!tap_ || tap_->owner() != owner) {
      return absl::NotFoundError("the capture is no longer running");
    }
    DrainPassLocked(/*counters=*/false);
    absl::Status s = tap_->Close();
    tap_.reset();
    internal::SetSessionLevel(static_cast<int>(options_.level));
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
    // Named, so that `top -H` and the overhead benchmark tell the
    // profiler's own threads from the program's.
    pthread_setname_np(pthread_self(), "podscope-drain");
    using Clock = std::chrono::steady_clock;
    const auto drain_interval = std::clamp<std::chrono::steady_clock::duration>(
        options_.flush_interval / 20, std::chrono::milliseconds(1),
        options_.flush_interval);
    auto next_flush = Clock::now() + options_.flush_interval;
    // Idle: the last pass found no thread records. The thread then sleeps
    // until the next flush, and the first block a thread fills rings it
    // awake (internal::RingDrainBell): an idle capture wakes a few times a
    // second instead of hundreds, and a burst is drained as soon as it
    // fills a block.
    bool idle = false;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (idle) {
        lock.unlock();  // the bell takes mutex_ when it rings
        internal::ListenForDrainBell(this, [this] {
          {
            std::lock_guard<std::mutex> rung(mutex_);
            bell_rung_ = true;
          }
          cv_.notify_all();
        });
        lock.lock();
      }
      const auto wake =
          idle ? next_flush
               : std::min(next_flush, Clock::now() + drain_interval);
      cv_.wait_until(lock, wake, [&] { return stopping_ || bell_rung_; });
      bell_rung_ = false;
      if (idle) {
        lock.unlock();
        internal::SilenceDrainBell(this);
        lock.lock();
      }
      if (stopping_) break;
      lock.unlock();
      {
        if (Clock::now() >= next_flush) {
          Flush();
          next_flush = Clock::now() + options_.flush_interval;
        } else {
          std::lock_guard<std::mutex> drain(drain_mutex_);
          DrainThreadsLocked();
        }
        std::lock_guard<std::mutex> drain(drain_mutex_);
        idle = drainer_->records_seen() == seen;
        seen = drainer_->records_seen();
      }
      lock.lock();
    }
    lock.unlock();
    Flush();
  }

  void WriteMetadata() {
    std::lock_guard<std::mutex> drain(drain_mutex_);
    WriteMetadataLocked();
  }
  void WriteMetadataLocked() {
    tf::proto::Metadata m =
        internal::RecordingMetadata(options_, clock_, &facts_generation_);
    drainer_->MapDeviceTracks(&m);
    writer_->SetMetadata(m);
  }

  // The threads' and the external events into the writers and the flight
  // recorder (drain_mutex_ held).
  void DrainThreadsLocked() {
    internal::SessionDrainer* also = tap_ ? tap_->drainer() : nullptr;
    std::lock_guard<std::mutex> buffers(internal::BufferDrainMutex());
    // Fresh blocks for a thread that outran the last pass, before this one
    // (which may take a while) recycles the blocks it filled. Under the
    // drain mutex: exited threads' buffers are freed under it.
    internal::BufferRegistry::Get().Refill();
    internal::RecorderFeed recorder;
    drainer_->DrainThreads(also, recorder.drainer());
    drainer_->DrainExternal(also, recorder.drainer());
  }

  // Everything recorded so far into the writers (drain_mutex_ held).
  void DrainPassLocked(bool counters) {
    // Keep the tick-to-ns map exact as the capture goes on: the rate
    // measured over the whole capture so far.
    clock_.calibration = RefineCalibration(clock_.calibration);
    drainer_->set_file_clock(Skewed(clock_.calibration, skew_));
    if (tap_) tap_->set_calibration(clock_.calibration);
    DrainThreadsLocked();
    if (sampling_) drainer_->DrainSamples(sampling_.get());
    if (tap_) tap_->DrainSamples();
    if (counters && options_.process_counters) {
      using Sampler = internal::ProcessCounterSampler;
      const Sampler::Reading r = counters_.Sample();
      drainer_->AddCounter(Sampler::kResidentName, Sampler::kResidentUnit,
                           r.monotonic_ns, r.resident_bytes);
      if (r.cpu_percent) {
        drainer_->AddCounter(Sampler::kCpuName, Sampler::kCpuUnit,
                             r.monotonic_ns, *r.cpu_percent);
      }
      if (tap_) tap_->AddProcessCounters(r);
    }
  }

  // Everything recorded so far into the files, which are flushed. The
  // writer is only used under drain_mutex_: a capture that ends drains
  // into it from another thread (DetachTap).
  void Flush() {
    absl::Status s;
    {
      std::lock_guard<std::mutex> drain(drain_mutex_);
      DrainPassLocked(/*counters=*/true);
      // Streamed captures measure their own offsets.
      if (owner_ == 0 || extras_.job_clock_offsets) {
        internal::DrainReferenceClockOffsets(
            &clock_cursor_, [&](const tf::proto::ClockOffset& o) {
              writer_->AddClockOffset(o);
            });
      }
      // A capture's stream failing (its clients gone) is the capture's
      // end, not this trace's error.
      if (tap_) (void)tap_->Flush();
      if (internal::FactsGeneration() != facts_generation_) {
        WriteMetadataLocked();
      }
      s = writer_->Flush();
    }
    if (!s.ok() && error_.ok()) error_ = s;
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.events = writer_->stats().events;
    stats_.bytes = writer_->stats().bytes;
    stats_.flushes += 1;
    stats_.dropped = internal::ExternalEvents::Get().dropped() -
                     external_drop_base_ + drainer_->dropped_by_threads();
  }

  const std::string path_;
  const TraceOptions options_;
  std::unique_ptr<tf::TraceWriter> writer_;
  std::unique_ptr<internal::SamplingCollector> sampling_;
  std::unique_ptr<internal::SessionDrainer> drainer_;
  internal::ProcessCounterSampler counters_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;   // guarded by mutex_
  bool bell_rung_ = false;  // guarded by mutex_
  absl::Status error_;

  // Held by every pass over the drainers and the tap.
  std::mutex drain_mutex_;
  std::unique_ptr<CaptureTap> tap_;  // guarded by drain_mutex_

  const uint64_t owner_;
  const internal::CaptureExtras extras_;
  const ClockSkew skew_;
  internal::RecordingClock clock_;  // calibration guarded by drain_mutex_
  uint64_t facts_generation_ = 0;
  uint64_t clock_cursor_ = internal::kClockCursorStart;  // drain_mutex_
  uint64_t external_drop_base_ = 0;

  std::mutex stats_mutex_;
  SessionStats stats_;
};

std::mutex g_session_mutex;
std::unique_ptr<Session> g_session;  // guarded by g_session_mutex
// How captures that shared a session ended when the session stopped under
// them, until their owners ask (StopOwnedSession).
std::map<uint64_t, absl::Status>* EndedTaps() {
  static auto* ended = new std::map<uint64_t, absl::Status>();
  return ended;
}
// The captures whose shared session is stopping (no longer g_session, its
// file still closing): they still run until it has stopped, and how they
// ended is then in EndedTaps. Guarded by g_session_mutex; g_session_cv is
// told when one is done.
std::map<uint64_t, int>* StoppingTaps() {
  static auto* stopping = new std::map<uint64_t, int>();
  return stopping;
}
std::condition_variable g_session_cv;

// Fills in defaults that come from the environment and the process facts.
TraceOptions ResolveOptions(const TraceOptions& options) {
  TraceOptions o = options;
  if (o.session_id.empty()) {
    std::lock_guard<std::mutex> lock(internal::Facts().mutex);
    o.session_id = internal::Facts().session_id;
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

absl::Status BusyError() {
  if (g_session->owner() != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("a remote capture (session '", g_session->session_id(),
                     "') is recording this process"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("a trace is already being recorded to ", g_session->path()));
}

// Starts `session` as the process's session; g_session_mutex is held.
absl::Status Install(std::unique_ptr<Session> session) {
  if (absl::Status s = session->Start(); !s.ok()) return s;
  g_session = std::move(session);
  return absl::OkStatus();
}

// Takes the process's session out (g_session_mutex held) to be stopped
// by Uninstall: a capture sharing it counts as running until then.
std::unique_ptr<Session> TakeSessionLocked() {
  if (const uint64_t tap = g_session->TapOwner(); tap != 0) {
    ++(*StoppingTaps())[tap];
  }
  return std::move(g_session);
}

// Stops `session` (taken by TakeSessionLocked); remembers how a capture
// that shared it ended.
absl::Status Uninstall(std::unique_ptr<Session> session) {
  const uint64_t sharing = session->TapOwner();
  uint64_t tap_owner = 0;
  absl::Status tap_status;
  absl::Status s = session->Stop(&tap_owner, &tap_status);
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (tap_owner != 0) (*EndedTaps())[tap_owner] = tap_status;
  if (sharing != 0) {
    auto it = StoppingTaps()->find(sharing);
    if (it != StoppingTaps()->end() && --it->second == 0) {
      StoppingTaps()->erase(it);
    }
    g_session_cv.notify_all();
  }
  return s;
}

}  // namespace

bool IsValidSessionId(std::string_view id) {
  // One folder name that needs no change to be safe (no "..", no hidden
  // folder, nothing that reads as an option).
  if (id.size() > 128 || !base::IsSafeFileComponent(id)) return false;
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
          "' is not a single folder name (letters, digits, '-', '_', '.', "
          "':', '+', not starting with '.' or '-'; at most 128)"));
    }
    folder /= o.session_id;
  }
  if (o.per_process_subdir) {
    int index;
    {
      std::lock_guard<std::mutex> facts_lock(internal::Facts().mutex);
      index = internal::Facts().process_index;
    }
    folder /= absl::StrCat("proc_", index >= 0 ? index : getpid());
  }
  std::string failed_part;
  if (std::error_code e =
          base::MakeDirectories(folder.string(), &failed_part)) {
    return absl::InternalError(absl::StrCat("StartTrace: cannot create ",
                                            failed_part, ": ", e.message()));
  }
  std::error_code ec;
  const std::string path = (folder / TraceFileName()).string();
  PODSCOPE_ASSIGN_OR_RETURN(auto writer,
                            tf::TraceWriter::Create(path, WriterOptionsFor(o)));
  absl::Status s = Install(
      std::make_unique<Session>(path, o, std::move(writer), /*owner=*/0));
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
    session = TakeSessionLocked();
  }
  const std::string path = session->path();
  if (absl::Status s = Uninstall(std::move(session)); !s.ok()) return s;
  return path;
}

std::string TraceFileName() {
  return absl::StrCat(internal::HostName(), ".", getpid(),
                      std::string(tf::kFileExtension));
}

namespace internal {

absl::Status StartOwnedSession(std::unique_ptr<tf::RecordSink> sink,
                               const TraceOptions& options,
                               const std::string& description, uint64_t owner,
                               const CaptureExtras& extras) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (g_session) return BusyError();
  const TraceOptions o = ResolveOptions(options);
  if (absl::Status s = CheckOptions(o, "capture"); !s.ok()) return s;
  PODSCOPE_ASSIGN_OR_RETURN(
      auto writer,
      tf::TraceWriter::Create(std::move(sink), WriterOptionsFor(o)));
  return Install(std::make_unique<Session>(description, o, std::move(writer),
                                           owner, extras));
}

absl::Status ShareLocalSession(std::unique_ptr<tf::RecordSink> sink,
                               const TraceOptions& options, uint64_t owner,
                               std::string* session_id,
                               const CaptureExtras& extras) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (!g_session || g_session->owner() != 0) {
    return absl::FailedPreconditionError(
        "no trace that this process records itself is running");
  }
  TraceOptions o = options;
  if (!g_session->session_id().empty()) o.session_id = g_session->session_id();
  if (absl::Status s = CheckOptions(o, "capture"); !s.ok()) return s;
  PODSCOPE_ASSIGN_OR_RETURN(
      auto writer,
      tf::TraceWriter::Create(std::move(sink), WriterOptionsFor(o)));
  // The trace's own file has the job's offsets; this one starts with the
  // latest (or the client's).
  for (const tf::proto::ClockOffset& c : extras.clock_offsets) {
    writer->AddClockOffset(c);
  }
  if (extras.job_clock_offsets) {
    uint64_t cursor = internal::kClockCursorStart;
    internal::DrainReferenceClockOffsets(
        &cursor,
        [&](const tf::proto::ClockOffset& c) { writer->AddClockOffset(c); });
  }
  if (absl::Status s =
          g_session->AttachTap(owner, o, std::move(writer), extras);
      !s.ok()) {
    return s;
  }
  *session_id = o.session_id;
  return absl::OkStatus();
}

absl::Status StopOwnedSession(uint64_t owner) {
  std::unique_ptr<Session> session;
  {
    std::unique_lock<std::mutex> lock(g_session_mutex);
    // The shared session is stopping: its end is the capture's.
    g_session_cv.wait(lock, [&] { return !StoppingTaps()->count(owner); });
    auto ended = EndedTaps()->find(owner);
    if (ended != EndedTaps()->end()) {
      absl::Status s = ended->second;
      EndedTaps()->erase(ended);
      return s;
    }
    if (g_session && g_session->owner() == 0) {
      return g_session->DetachTap(owner);
    }
    if (!g_session || g_session->owner() != owner) {
      return absl::NotFoundError("the capture is no longer running");
    }
    session = TakeSessionLocked();
  }
  return Uninstall(std::move(session));
}

bool OwnedSessionRunning(uint64_t owner) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  if (StoppingTaps()->count(owner)) return true;
  if (!g_session) return false;
  if (g_session->owner() == owner) return true;
  return g_session->owner() == 0 && g_session->HasTap(owner);
}

std::string ActiveSessionId(bool* active) {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  *active = g_session != nullptr;
  return g_session ? g_session->session_id() : std::string();
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

SamplingCost CurrentSamplingCost() {
  const sampling::SamplerCost c = sampling::StackSampler::Cost();
  return {c.samples,      c.timed_samples,    c.timed_handler_ns,
          c.fast_unwinds, c.fallback_unwinds, c.leaf_only_unwinds};
}

double SamplingHandlerNs(const SamplingCost& before,
                         const SamplingCost& after) {
  const uint64_t timed = after.timed_samples - before.timed_samples;
  if (timed == 0) return 0;
  const double per_sample =
      static_cast<double>(after.timed_handler_ns - before.timed_handler_ns) /
      static_cast<double>(timed);
  return per_sample * static_cast<double>(after.samples - before.samples);
}

SessionStats CurrentSessionStats() {
  std::lock_guard<std::mutex> lock(g_session_mutex);
  return g_session ? g_session->stats() : SessionStats();
}

}  // namespace podscope::profiler
