// Recording sessions: StartTrace(dir) / StopTrace(), the seed's
// start_trace / stop_trace. A session streams this process's events into
// `<dir>/<host>.<pid>.podtrace`, flushing at least every flush_interval, so
// a process killed at any moment leaves a file readable up to its last
// flush.
#ifndef PODSCOPE_PROFILER_SESSION_H_
#define PODSCOPE_PROFILER_SESSION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/profiler/clock.h"
#include "podscope/profiler/trace.h"
#include "podscope/trace_format/trace.pb.h"

namespace podscope::profiler {

struct TraceOptions {
  // Events above this level are not recorded.
  Level level = Level::kInfo;
  // Write into <dir>/proc_<N>/ (N: the process index when known, else the
  // pid), as the seed does to keep workers from racing on one folder.
  bool per_process_subdir = false;
  // How often the writer thread drains thread buffers into the file.
  std::chrono::milliseconds flush_interval{100};
  // Memory bounds of the threads' event buffers, in blocks of 2048 events
  // (48 KiB each), per thread and for all threads together: 240 MiB
  // (10.5 M events) for one thread, 256 MiB (11.2 M events) in all. Blocks
  // the writer has collected go back to their thread for reuse, so these
  // bound what the writer is behind by, not what a burst records;
  // docs/profiler.md has the arithmetic. When a thread reaches either bound
  // and the writer has not handed a block back yet, its events are dropped
  // and counted, never blocking it.
  uint32_t max_blocks_per_thread = 5120;
  uint32_t max_blocks_total = 5461;
  // CPU stack samples per second of each thread's CPU time; 0 turns the
  // sampler off.
  int sampling_hz = 0;
  // Process counters (resident memory, CPU use) are sampled at each flush
  // when true.
  bool process_counters = true;
  // zlib level of the file's chunks; 0 writes them uncompressed, for event
  // rates beyond what compression keeps up with on one core.
  int compression_level = 1;
  // Identifies the capture across processes; defaults to $PODSCOPE_SESSION.
  std::string session_id;
  // The clock the session's timestamps are on; null is the process's clock
  // (ProcessClock(), skewed only by the PODSCOPE_TEST_CLOCK_* variables).
  // Tests set a SkewedClock to give one session a clock of its own.
  std::shared_ptr<const ProfilerClock> clock;
};

// Starts recording into `dir` (created if missing). With a session id
// (TraceOptions::session_id, else SetSessionId's, else $PODSCOPE_SESSION)
// the file goes to `<dir>/<session>/<host>.<pid>.podtrace`, so that every
// process of a job, and `podscope capture`, fill one session folder;
// without one, to `<dir>/<host>.<pid>.podtrace`. FailedPrecondition if a
// session (local or a remote capture) is already recording;
// InvalidArgument for a session id that is not a plain folder name.
absl::Status StartTrace(const std::string& dir,
                        const TraceOptions& options = {});

// Stops recording, writes the rest and the index, and returns the file's
// path.
absl::StatusOr<std::string> StopTrace();

bool IsTracing();

// `<host>.<pid>.podtrace` for this process.
std::string TraceFileName();

// Whether `id` can name a session folder: 1 to 128 of letters, digits,
// '-', '_', '.', ':', '+', not starting with '.' or '-' (so never "." or
// ".."): a name base::SafeFileComponent leaves as it is.
bool IsValidSessionId(std::string_view id);

// The path of the file being written, empty when not tracing.
std::string CurrentTracePath();

struct SessionStats {
  uint64_t events = 0;   // written to the file so far
  uint64_t dropped = 0;  // dropped by full thread buffers this session
  uint64_t bytes = 0;
  uint64_t flushes = 0;
};
SessionStats CurrentSessionStats();

// What stack sampling has cost this process's sampled threads so far, over
// all sessions (cumulative; take differences): the samples taken and, for
// one sample in 16, the sampled thread's CPU time spent in the signal
// handler (reading a thread's CPU clock is a system call, so the others
// are not timed). The kernel's part of delivering each signal is not in
// it. Stacks are walked by a cached unwinder, or by libunwind where it
// declines; one thread at a time walks with libunwind, and a sample that
// would need it while another thread does keeps only its leaf frame.
struct SamplingCost {
  uint64_t samples = 0;
  uint64_t timed_samples = 0;
  uint64_t timed_handler_ns = 0;
  uint64_t fast_unwinds = 0;
  uint64_t fallback_unwinds = 0;
  uint64_t leaf_only_unwinds = 0;
};
SamplingCost CurrentSamplingCost();
// The handler's CPU time over the samples taken between two readings,
// estimated from the timed ones (0 when none was timed).
double SamplingHandlerNs(const SamplingCost& before, const SamplingCost& after);

// Facts about this process that the runtime and the capture client know;
// they go into the metadata of the current and later sessions.
void SetProcessInfo(int process_index, int process_count);
void SetSessionId(const std::string& session_id);
void AddDevice(const trace_format::proto::Device& device);
// A free-form fact in the metadata's `attributes` (e.g. the runtime's
// "machine.peak_gflops"); setting a key again replaces its value.
void SetMetadataAttribute(const std::string& key, const std::string& value);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_SESSION_H_
