// The flight recorder: a TraceWriter whose records go into a FlightRing
// instead of a file, fed by whoever drains the threads' buffers (its own
// thread, or a running session's), cut into a chunk every drain interval.
#include "podscope/profiler/flight_recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/file_names.h"
#include "podscope/base/status_macros.h"
#include "podscope/profiler/clock_sync.h"
#include "podscope/trace_format/format.h"
#include "podscope/trace_format/writer.h"
#include "src/flight_recorder_internal.h"
#include "src/flight_ring.h"
#include "src/session_metadata.h"
#include "src/thread_buffer.h"

namespace podscope::profiler {
namespace {

namespace tf = ::podscope::trace_format;
using internal::RealtimeNs;

class Recorder {
 public:
  explicit Recorder(const FlightRecorderOptions& options)
      : options_(options), ring_(static_cast<uint64_t>(options.max_bytes)) {}

  absl::Status Init() {
    clock_.skew = ProcessClock().skew();
    clock_.calibration = CalibrateTicks(10);
    const uint64_t start_ticks = Ticks();
    clock_.start_ns = clock_.calibration.ToNs(start_ticks);
    clock_.start_realtime_ns = RealtimeNs();
    tf::WriterOptions wo;
    wo.compression_level = options_.compression_level;
    PODSCOPE_ASSIGN_OR_RETURN(writer_,
                              tf::TraceWriter::Create(ring_.MakeSink(), wo));
    drainer_ = std::make_unique<internal::SessionDrainer>(
        writer_.get(), clock_.skew, start_ticks, clock_.start_ns);
    drainer_->set_file_clock(FileClock());
    chunk_opened_ns_ = FileClock().ToNs(start_ticks);
    writer_->AddClockSnapshot(clock_.skew.Apply(MonotonicNs()), RealtimeNs());
    WriteMetadata(TraceOptionsFor(""));
    return Cut();
  }

  internal::SessionDrainer* drainer() { return drainer_.get(); }

  // Drains the threads' buffers and the external events itself (no
  // session does), then frees the buffers of threads that exited.
  // BufferDrainMutex() and the recorder's lock are held.
  void DrainOwn() {
    drain_started_ns_ = FileClock().ToNs(Ticks());
    drainer_->DrainThreads();
    drainer_->DrainExternal();
    drainer_->Forget(internal::BufferRegistry::Get().ReleaseExited());
  }

  // Ends the current chunk and drops what is older than the window.
  absl::Status Cut() {
    clock_.calibration = RefineCalibration(clock_.calibration);
    drainer_->set_file_clock(FileClock());
    internal::DrainReferenceClockOffsets(
        &clock_cursor_,
        [&](const tf::proto::ClockOffset& o) { writer_->AddClockOffset(o); });
    if (internal::FactsGeneration() != facts_generation_) {
      WriteMetadata(TraceOptionsFor(""));
    }
    absl::Status s = writer_->Flush();
    const int64_t now = FileClock().ToNs(Ticks());
    std::vector<tf::proto::ChunkEntry> entries;
    writer_->TakeChunkEntries(&entries);
    ring_.AdoptChunkEntries(std::move(entries), chunk_opened_ns_, now);
    // What the threads record from here on goes to the next chunk: what
    // this pass's drain missed ended after the drain began; when a session
    // drains, what it hands over after this cut.
    chunk_opened_ns_ = drain_started_ns_ >= 0 ? drain_started_ns_ : now;
    drain_started_ns_ = -1;
    ring_.Evict(now - WindowNs());
    if (!s.ok() && error_.ok()) error_ = s;
    return s;
  }

  // The records of the last window, with `reason` in their metadata.
  absl::StatusOr<internal::FlightRing::Snapshot> Take(
      const std::string& session_id, std::string_view reason) {
    if (!error_.ok()) return error_;
    // What the threads handed over goes in first, and is held to the byte
    // bound, so that the drop counts written below are the dump's.
    PODSCOPE_RETURN_IF_ERROR(Cut());
    internal::RecordingClock window = clock_;
    window.start_ns = std::max(clock_.start_ns, MonotonicNs() - WindowNs());
    window.start_realtime_ns =
        std::max(clock_.start_realtime_ns, RealtimeNs() - WindowNs());
    uint64_t generation = 0;
    tf::proto::Metadata m = internal::RecordingMetadata(
        TraceOptionsFor(session_id), window, &generation);
    drainer_->MapDeviceTracks(&m);
    auto& attributes = *m.mutable_attributes();
    attributes["flight_recorder.reason"] = std::string(reason);
    attributes["flight_recorder.window_ms"] =
        absl::StrCat(options_.window.count());
    attributes["flight_recorder.dropped_chunks"] =
        absl::StrCat(ring_.dropped_chunks());
    attributes["flight_recorder.dropped_events"] =
        absl::StrCat(ring_.dropped_events());
    writer_->SetMetadata(m);
    writer_->AddClockSnapshot(clock_.skew.Apply(MonotonicNs()), RealtimeNs());
    PODSCOPE_RETURN_IF_ERROR(Cut());
    // Later cuts describe the recorder again, not this dump.
    facts_generation_ = 0;
    return ring_.Take(FileClock().ToNs(Ticks()) - WindowNs());
  }

  FlightRecorderStats Stats() const {
    FlightRecorderStats s;
    s.running = true;
    s.chunks = ring_.chunks();
    s.events = ring_.events();
    s.bytes = ring_.bytes();
    s.dropped_chunks = ring_.dropped_chunks();
    s.dropped_events = ring_.dropped_events();
    s.dropped_by_threads = drainer_->dropped_by_threads();
    return s;
  }

  const FlightRecorderOptions& options() const { return options_; }

 private:
  int64_t WindowNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(options_.window)
        .count();
  }
  TickCalibration FileClock() const {
    return Skewed(clock_.calibration, clock_.skew);
  }
  TraceOptions TraceOptionsFor(const std::string& session_id) const {
    TraceOptions o;
    o.level = options_.level;
    o.flush_interval = options_.drain_interval;
    o.compression_level = options_.compression_level;
    o.session_id = session_id;
    return o;
  }
  void WriteMetadata(const TraceOptions& o) {
    tf::proto::Metadata m =
        internal::RecordingMetadata(o, clock_, &facts_generation_);
    drainer_->MapDeviceTracks(&m);
    writer_->SetMetadata(m);
  }

  const FlightRecorderOptions options_;
  internal::RecordingClock clock_;
  internal::FlightRing ring_;
  std::unique_ptr<tf::TraceWriter> writer_;
  std::unique_ptr<internal::SessionDrainer> drainer_;
  uint64_t clock_cursor_ = internal::kClockCursorStart;
  uint64_t facts_generation_ = 0;
  // When the chunk being filled began, and when the last drain of the
  // threads' buffers since the last cut began (-1: none).
  int64_t chunk_opened_ns_ = 0;
  int64_t drain_started_ns_ = -1;
  absl::Status error_;
};

// The recorder and its thread. Never destroyed: a program exits with the
// recorder running (it is on for the process's life), and its thread may
// still drain while static objects are destroyed.
struct Globals {
  // Guards recorder and everything it holds, and stopping. Taken after
  // BufferDrainMutex() by whoever takes both.
  std::mutex mutex;
  Recorder* recorder = nullptr;
  bool stopping = false;
  std::condition_variable wake;
  std::mutex lifecycle;  // serialises Start and Stop; guards thread
  std::thread thread;
};
Globals& G() {
  static auto* globals = new Globals();
  return *globals;
}

// One pass of the recorder's thread: drain (unless a session does), cut.
void Pass() {
  {
    std::lock_guard<std::mutex> drain(internal::BufferDrainMutex());
    if (internal::SessionsDraining() == 0) {
      std::lock_guard<std::mutex> lock(G().mutex);
      if (G().recorder != nullptr) G().recorder->DrainOwn();
    }
  }
  std::lock_guard<std::mutex> lock(G().mutex);
  if (G().recorder != nullptr) (void)G().recorder->Cut();
}

void Run(std::chrono::milliseconds interval) {
  pthread_setname_np(pthread_self(), "podscope-flight");
  std::unique_lock<std::mutex> lock(G().mutex);
  while (!G().stopping) {
    G().wake.wait_for(lock, interval, [] { return G().stopping; });
    if (G().stopping) break;
    lock.unlock();
    Pass();
    lock.lock();
  }
}

// Writes `bytes` as a new file `<stem>.podtrace` (or a suffixed name) of
// folder `dir`: a temporary file first, synced, then renamed.
absl::StatusOr<std::string> WriteDumpFile(const std::string& dir,
                                          const std::string& stem,
                                          std::string_view bytes) {
  std::string failed_part;
  if (std::error_code e = base::MakeDirectories(dir, &failed_part)) {
    return absl::InternalError(absl::StrCat(
        "DumpFlightRecorder: cannot create ", failed_part, ": ", e.message()));
  }
  base::UniqueFd dir_fd;
  if (std::error_code e = base::OpenDirectory(dir, &dir_fd)) {
    return absl::InternalError(absl::StrCat("DumpFlightRecorder: cannot open ",
                                            dir, ": ", e.message()));
  }
  base::UniqueFd fd;
  std::string tmp_name;
  const std::string ext(tf::kFileExtension);
  if (std::error_code e = base::CreateFileExclusive(
          dir_fd.get(), stem, ext + ".tmp", &fd, &tmp_name)) {
    return absl::InternalError(
        absl::StrCat("DumpFlightRecorder: cannot create ", dir, "/", stem, ext,
                     ".tmp: ", e.message()));
  }
  std::error_code e = base::WriteFully(fd.get(), bytes);
  if (!e && fdatasync(fd.get()) != 0) e = {errno, std::generic_category()};
  if (!e) e = fd.Close();
  std::string name;
  if (!e) e = base::RenameToFreshName(dir_fd.get(), tmp_name, stem, ext, &name);
  if (e) {
    unlinkat(dir_fd.get(), tmp_name.c_str(), 0);
    return absl::InternalError(absl::StrCat("DumpFlightRecorder: cannot write ",
                                            dir, "/", tmp_name, ": ",
                                            e.message()));
  }
  (void)base::SyncDirectory(dir_fd.get());
  return absl::StrCat(dir, "/", name);
}

}  // namespace

namespace internal {

RecorderFeed::RecorderFeed() : lock_(G().mutex) {
  if (G().recorder != nullptr) drainer_ = G().recorder->drainer();
}

void SessionDrainStarts() {
  std::lock_guard<std::mutex> drain(BufferDrainMutex());
  ++SessionsDraining();
}

void SessionDrainEnds() {
  std::lock_guard<std::mutex> drain(BufferDrainMutex());
  --SessionsDraining();
  // Another session's drainer may still hold the buffers.
  if (SessionsDraining() != 0) return;
  std::lock_guard<std::mutex> lock(G().mutex);
  std::vector<ThreadBuffer*> released = BufferRegistry::Get().ReleaseExited();
  if (G().recorder != nullptr) G().recorder->drainer()->Forget(released);
}

}  // namespace internal

absl::Status StartFlightRecorder(const FlightRecorderOptions& options) {
  if (options.window.count() <= 0 || options.max_bytes <= 0 ||
      options.drain_interval.count() <= 0) {
    return absl::InvalidArgumentError(
        "StartFlightRecorder: window, max_bytes and drain_interval must be "
        "positive");
  }
  if (options.compression_level < 0 || options.compression_level > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("StartFlightRecorder: compression_level must be 0..9, "
                     "not ",
                     options.compression_level));
  }
  std::lock_guard<std::mutex> lifecycle(G().lifecycle);
  {
    std::lock_guard<std::mutex> lock(G().mutex);
    if (G().recorder != nullptr) {
      return absl::FailedPreconditionError(
          "StartFlightRecorder: the flight recorder already runs");
    }
  }
  auto recorder = std::make_unique<Recorder>(options);
  {
    // Events already waiting in the buffers predate the recorder.
    std::lock_guard<std::mutex> drain(internal::BufferDrainMutex());
    PODSCOPE_RETURN_IF_ERROR(recorder->Init());
    std::lock_guard<std::mutex> lock(G().mutex);
    G().recorder = recorder.release();
    G().stopping = false;
  }
  internal::SetRecorderLevel(static_cast<int>(options.level));
  G().thread = std::thread(Run, options.drain_interval);
  return absl::OkStatus();
}

void StopFlightRecorder() {
  std::lock_guard<std::mutex> lifecycle(G().lifecycle);
  {
    std::lock_guard<std::mutex> lock(G().mutex);
    if (G().recorder == nullptr) return;
    G().stopping = true;
  }
  G().wake.notify_all();
  G().thread.join();
  internal::SetRecorderLevel(0);
  std::unique_ptr<Recorder> recorder;
  {
    // No drain pass may be using its drainer.
    std::lock_guard<std::mutex> drain(internal::BufferDrainMutex());
    std::lock_guard<std::mutex> lock(G().mutex);
    recorder.reset(G().recorder);
    G().recorder = nullptr;
  }
}

bool FlightRecorderRunning() {
  std::lock_guard<std::mutex> lock(G().mutex);
  return G().recorder != nullptr;
}

absl::StatusOr<std::chrono::milliseconds> ParseFlightRecorderWindow(
    std::string_view text) {
  const std::string t = absl::AsciiStrToLower(std::string(text));
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("$", kFlightRecorderEnv, "='", std::string(text),
                     "': expected a duration such as 30s, 500ms or 2m, or 0 "
                     "(off)"));
  };
  if (t == "off" || t == "0") return std::chrono::milliseconds(0);
  int64_t value = 0;
  const char* end = t.data() + t.size();
  auto [p, ec] = std::from_chars(t.data(), end, value);
  if (ec != std::errc() || p == t.data() || value < 0) return bad();
  const std::string_view unit(p, static_cast<size_t>(end - p));
  // Up to a day: a window is kept in memory.
  constexpr int64_t kMaxMs = int64_t{24} * 3600 * 1000;
  int64_t ms;
  if (unit == "ms") {
    ms = value;
  } else if (unit == "s" || unit.empty()) {
    ms = value > kMaxMs ? kMaxMs + 1 : value * 1000;
  } else if (unit == "m") {
    ms = value > kMaxMs ? kMaxMs + 1 : value * 60 * 1000;
  } else {
    return bad();
  }
  if (ms > kMaxMs) return bad();
  return std::chrono::milliseconds(ms);
}

absl::Status StartFlightRecorderFromEnv() {
  const char* env = std::getenv(kFlightRecorderEnv);
  if (env == nullptr || *env == '\0') return absl::OkStatus();
  PODSCOPE_ASSIGN_OR_RETURN(const std::chrono::milliseconds window,
                            ParseFlightRecorderWindow(env));
  if (window.count() == 0 || FlightRecorderRunning()) return absl::OkStatus();
  FlightRecorderOptions options;
  options.window = window;
  absl::Status s = StartFlightRecorder(options);
  // Two callers racing: the recorder runs either way.
  if (absl::IsFailedPrecondition(s)) return absl::OkStatus();
  return s;
}

FlightRecorderStats GetFlightRecorderStats() {
  std::lock_guard<std::mutex> lock(G().mutex);
  return G().recorder != nullptr ? G().recorder->Stats()
                                 : FlightRecorderStats();
}

absl::StatusOr<FlightRecorderDump> DumpFlightRecorder(const std::string& dir,
                                                      std::string_view reason) {
  if (dir.empty()) {
    return absl::InvalidArgumentError(
        "DumpFlightRecorder: the directory is empty");
  }
  // The folder is the dump's session, as a capture's is.
  const std::string session_id = base::SafeFileComponent(
      std::filesystem::path(dir).lexically_normal().filename().string());
  {
    // The events of the last interval too, unless a session holds them.
    std::lock_guard<std::mutex> drain(internal::BufferDrainMutex());
    std::lock_guard<std::mutex> lock(G().mutex);
    if (G().recorder == nullptr) {
      return absl::FailedPreconditionError(
          "DumpFlightRecorder: the flight recorder is off (StartFlightRecorder "
          "or $PODSCOPE_FLIGHT_RECORDER turns it on)");
    }
    if (internal::SessionsDraining() == 0) G().recorder->DrainOwn();
  }
  internal::FlightRing::Snapshot snapshot;
  {
    std::lock_guard<std::mutex> lock(G().mutex);
    if (G().recorder == nullptr) {
      return absl::FailedPreconditionError(
          "DumpFlightRecorder: the flight recorder stopped");
    }
    PODSCOPE_ASSIGN_OR_RETURN(snapshot, G().recorder->Take(session_id, reason));
  }
  // The records are shared, not copied: the recorder goes on meanwhile.
  const std::string bytes = internal::FlightRing::Assemble(snapshot);
  FlightRecorderDump dump;
  dump.events = snapshot.events;
  dump.window_start_ns = snapshot.first_opened_ns;
  const std::string stem = base::SafeFileComponent(
      absl::StrCat(internal::HostName(), ".", getpid()));
  PODSCOPE_ASSIGN_OR_RETURN(dump.path, WriteDumpFile(dir, stem, bytes));
  dump.bytes = bytes.size();
  return dump;
}

}  // namespace podscope::profiler
