// The flight recorder: the last seconds of this process's trace, always in
// memory, whether or not a session (StartTrace, a remote capture) records.
// It records at the normal level (Level::kInfo) and keeps what it drains
// as encoded, compressed chunks, the oldest dropped first once they are
// older than the window or the bytes outgrow the bound. DumpFlightRecorder
// writes them as a trace file that the viewer, `podscope summary` and
// `podscope analyze` open like any session's.
//
//   podscope::profiler::StartFlightRecorder();           // 30 s, 64 MiB
//   ...
//   podscope::profiler::DumpFlightRecorder("/logs/hang-1", "stalled");
//
// $PODSCOPE_FLIGHT_RECORDER ("30s", "500ms", "2m"; "0" or "off": off)
// turns it on in processes that call StartFlightRecorderFromEnv (the
// profiler server's start and SetProcessInfo do), which is how a job's
// launcher turns it on in every rank. docs/profiler.md has its costs.
#ifndef PODSCOPE_PROFILER_FLIGHT_RECORDER_H_
#define PODSCOPE_PROFILER_FLIGHT_RECORDER_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/profiler/trace.h"

namespace podscope::profiler {

inline constexpr char kFlightRecorderEnv[] = "PODSCOPE_FLIGHT_RECORDER";

struct FlightRecorderOptions {
  // How far back a dump reaches.
  std::chrono::milliseconds window{30000};
  // Memory for the encoded chunks and the strings and tracks they name;
  // past it the oldest chunks are dropped (counted) even inside the window.
  int64_t max_bytes = int64_t{64} << 20;
  // How often the recorder moves events out of the threads' buffers and
  // cuts a chunk: a dump misses at most the last interval, and holds
  // nothing older than the window plus one interval.
  std::chrono::milliseconds drain_interval{100};
  // Events at or below this level are kept; while the recorder runs the
  // process records at least at this level.
  Level level = Level::kInfo;
  // zlib level of the chunks (as TraceOptions::compression_level).
  int compression_level = 1;
};

// Starts the recorder. FailedPrecondition when it already runs;
// InvalidArgument for a window, bound or interval that is not positive.
absl::Status StartFlightRecorder(const FlightRecorderOptions& options = {});

// Stops the recorder and frees what it kept. Nothing when it is off.
void StopFlightRecorder();

bool FlightRecorderRunning();

// The window $PODSCOPE_FLIGHT_RECORDER asks for: a number with the unit
// ms, s or m ("30s"); "0", "0s" or "off" is zero (off). InvalidArgument
// naming the variable and what was expected otherwise.
absl::StatusOr<std::chrono::milliseconds> ParseFlightRecorderWindow(
    std::string_view text);

// Starts the recorder with the window $PODSCOPE_FLIGHT_RECORDER names
// (other options default), unless it is unset, zero or the recorder runs.
// A malformed value is an error and leaves the recorder off.
absl::Status StartFlightRecorderFromEnv();

struct FlightRecorderStats {
  bool running = false;
  uint64_t chunks = 0;          // kept now
  uint64_t events = 0;          // in the kept chunks
  uint64_t bytes = 0;           // kept now: chunks and dictionaries
  uint64_t dropped_chunks = 0;  // dropped by the byte bound, not by age
  uint64_t dropped_events = 0;  // in those chunks
  // Events the threads' full buffers dropped while the recorder ran.
  uint64_t dropped_by_threads = 0;
};
FlightRecorderStats GetFlightRecorderStats();

struct FlightRecorderDump {
  std::string path;
  uint64_t events = 0;
  uint64_t bytes = 0;
  // When the oldest chunk in the file began, on the trace's timeline: the
  // threads' scopes and instants in the file ended after it (events of
  // libraries with their own tracks arrive when those report them). About
  // one drain interval before the window; more when the recorder's thread
  // ran late on a busy machine.
  int64_t window_start_ns = 0;
};

// Writes the last window of the trace to `<dir>/<host>.<pid>.podtrace`
// (dir is created if missing; a name already taken gets a suffix, as
// base::CreateFileExclusive chooses it): written to a temporary name,
// synced and renamed, so the file is whole or absent. `reason` goes into
// the file's metadata (attribute "flight_recorder.reason"). Works while a
// session records, without disturbing it. FailedPrecondition when the
// recorder is off.
absl::StatusOr<FlightRecorderDump> DumpFlightRecorder(const std::string& dir,
                                                      std::string_view reason);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_FLIGHT_RECORDER_H_
