// The capture client: records many workers' profiler servers at once into
// one session folder, `<logdir>/<session>/<host>.<pid>.podtrace` per worker
// (the host as base::SafeFileComponent makes it, `.1`, `.2`... before the
// extension when the name is taken; never a file outside the folder, a
// link followed or a file replaced) plus `manifest.json`, with each worker's
// clock offset to this process's clock measured before and after and stored in
// its file. `podscope capture` is this call with flags.
#ifndef PODSCOPE_PROFILER_CAPTURE_H_
#define PODSCOPE_PROFILER_CAPTURE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::profiler {

// How to reach the workers' servers.
struct ConnectOptions {
  // Sent as `authorization: Bearer <token>`. Empty means
  // $PODSCOPE_PROFILER_TOKEN when it is set (set and empty: no token), else,
  // for a loopback worker, this user's token file (user_token.h).
  std::string token;
  // A PEM file of the CA (or the self-signed certificate) that signed the
  // servers' certificates; set, the client speaks TLS.
  std::string tls_ca_file;
  // Overrides the name checked against the certificates (tests on
  // 127.0.0.1 with a certificate for "localhost").
  std::string tls_server_name;
  int64_t connect_timeout_ms = 5000;
  // The largest message accepted from a worker, in MiB (1..2047): an XProf
  // worker answers with its whole trace in one.
  int64_t max_message_mb = 256;
};

// One NTP-style estimate of a worker's clock: reference = local + offset,
// where reference is this process's CLOCK_MONOTONIC and local the worker's
// profiler clock, known to +-uncertainty (half the best round trip).
struct ClockEstimate {
  int64_t local_ns = 0;  // the worker's clock at the measurement
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;
  int64_t round_trip_ns = 0;
};

// Probes `address`'s clock `probes` times (on its UDP probe port when it
// has one, else through gRPC) and keeps the probe with the smallest round
// trip.
absl::StatusOr<ClockEstimate> MeasureClockOffset(const std::string& address,
                                                 const ConnectOptions& connect,
                                                 int probes = 16);

struct CaptureProgress {
  int workers = 0;
  int streaming = 0;  // connected and receiving
  int finished = 0;   // done, successfully or not
  int failed = 0;
  uint64_t bytes = 0;
  uint64_t events = 0;
  int64_t elapsed_ms = 0;
};

struct WorkerResult;

struct CaptureOptions {
  std::vector<std::string> workers;  // "host:port"
  std::string logdir;
  // 1 .. the servers' limit; 0 records until the deadline of the stream is
  // reached or StopCapture; here it is required to be positive.
  int64_t duration_ms = 1000;
  // The session folder's name; empty: a UTC timestamp.
  std::string session;
  ConnectOptions connect;
  int level = 0;        // 0 default (info), 1 critical, 2 info, 3 verbose
  int sampling_hz = 0;  // CPU stack samples per second; 0 off
  int clock_probes = 16;
  // Called about every 250 ms from a thread of the capture.
  std::function<void(const CaptureProgress&)> progress;
  // When set and it becomes true (from any thread), the capture ends
  // early: workers not yet recording are not asked to, and recording ones
  // are sent Stop, so that their files end complete as when the duration
  // runs out. Stop ends the worker's capture for every client sharing it.
  // Polled about every 50 ms; must outlive the call.
  const std::atomic<bool>* cancel = nullptr;
  // When the workers are the ranks of a job (`podscope capture --job`):
  // the job's coordinator and each worker's rank, in the order of
  // `workers`; both go into the manifest.
  std::string job;
  std::vector<int> ranks;

  // Workers that speak XProf's `tensorflow.ProfilerService` (JAX,
  // TensorFlow, PyTorch/XLA) rather than Podscope's own: XProf's tracer
  // levels, sent as they are (host 0..3, device 0..1, python 0..1).
  int host_tracer_level = 2;
  int device_tracer_level = 1;
  int python_tracer_level = 0;
  // Keep each XProf worker's XSpace as
  // `<logdir>/plugins/profile/<session>/<host>.xplane.pb` too, the run
  // folder TensorBoard and XProf read.
  bool also_xplane = false;
  // How XProf workers' clocks are lined up: "wallclock", "rpc",
  // "collectives" or "best" (the strongest that works); see
  // docs/interop.md.
  std::string align = "best";
  // XProf workers start recording together, this long after every worker
  // has been reached (ProfileOptions.start_timestamp_ns). Podscope workers
  // that write their own files start together this long after the capture
  // began: the time it has to reach and probe them all; when that takes
  // longer, as soon as each can be sent the start (see worker_writes).
  int64_t start_lead_ms = 100;

  // Worker-side capture (`--worker_writes`): each worker writes its own
  // file, <its capture root>/<session>/<host>.<pid>.podtrace, and this
  // side receives progress and the file's name, size and crc32 only. The
  // capture root is the worker's (ServerOptions::capture_root), normally a
  // folder every host and this one share as `logdir`: the manifest goes
  // to <logdir>/<session>/ beside the files. Workers start together,
  // each at the same instant on its own clock as this side's probes map
  // it: `start_lead_ms` after the capture began, or, when reaching and
  // probing every worker took longer, when the last was reached plus
  // 20 ms and 0.3 ms per worker (the time to send each its start), so
  // that no worker is told an instant already past. Their files carry
  // those probes (or their job's clock) as clock offsets.
  bool worker_writes = false;
  // A window of steps instead of a duration (`--steps first:last`): every
  // worker records from the beginning of step `first_step` to the end of
  // step `last_step` as the program marks its steps (PODSCOPE_STEP);
  // duration_ms then bounds the wait.
  bool by_steps = false;
  int64_t first_step = 0;
  int64_t last_step = 0;

  // Worker-side captures that start on the job's clock
  // (CaptureRequest.start_at_job_ns): this process's profiler clock is the
  // job's (it is the job's coordinator) and every worker a rank that lines
  // its clock up with it through its heartbeats, so no worker is probed.
  // A rank without a job clock yet fails, saying so.
  bool start_on_job_clock = false;
  // Set, CaptureWorkers does not reach the workers itself: `relay` has
  // them recorded elsewhere (a job's coordinator, asked in one call;
  // job::RelayThroughCoordinator) and fills each result of `results`
  // (whose addresses and ranks are the options'), passing its progress to
  // `report`. A worker's `path` is then `<session>/<file>` as the worker
  // named it; CaptureWorkers checks that name, looks for the file under
  // logdir and writes the manifest as usual. An error from `relay` means
  // nothing was recorded: CaptureWorkers returns it and leaves no session
  // folder.
  std::function<absl::Status(
      std::vector<WorkerResult>* results,
      const std::function<void(const CaptureProgress&)>& report)>
      relay;
};

struct WorkerResult {
  std::string address;
  int rank = -1;      // CaptureOptions::ranks, when given
  bool ok = false;    // the file is complete
  std::string error;  // why not, naming the worker
  std::string path;   // the file written (may be partial when !ok)
  std::string host;   // as the worker said, unchecked: not a file name
  int64_t pid = 0;
  uint64_t bytes = 0;
  uint64_t events = 0;
  uint64_t dropped = 0;
  // This side could not write the file (a full disk, say): the error says
  // so, and the file holds the whole records written before it.
  bool write_failed = false;
  // The worker's clock against this one: with a worker that has a UDP
  // probe port, base::ClockFit over every probe (before, every 100 ms
  // through and after the capture) at up to 64 probe times, the first and
  // last included; through gRPC, the best probe before and (when alive)
  // after. Each uncertainty is a bound (docs/profiler-service.md). What the
  // file stores.
  std::vector<ClockEstimate> clock;
  // The measurements behind `clock` (before, every 100 ms through and
  // after the capture, each the best of a few probes).
  int clock_probes = 0;
  // Answered probes discarded for timestamps that cannot be trusted (out
  // of order, a negative or implausibly small round trip).
  int64_t clock_probes_discarded = 0;
  // How fast the worker's clock gains on this one, in parts per million:
  // trace_format::ClockModel's drift of the estimates in the file.
  double drift_ppm = 0;
  // "podscope" or "xprof" (tensorflow.ProfilerService); empty when the
  // worker was not reached.
  std::string protocol;
  // What recorded the trace: the worker's producer string, or for XProf
  // what its XSpace says of itself.
  std::string producer;
  // How the clock was aligned: "probes" for Podscope workers, else
  // "wallclock", "rpc" or "collectives"; the bound on the offset's error
  // (-1: not known) and, for collectives, on its error relative to the
  // other hosts of the fit; why a stronger method was not used.
  std::string alignment;
  int64_t alignment_uncertainty_ns = -1;
  int64_t alignment_relative_uncertainty_ns = -1;
  std::string alignment_note;
  // XProf: the start asked for (realtime ns), the XSpace kept
  // (CaptureOptions::also_xplane), and what the client did about the
  // worker that is worth knowing (a token not sent, say).
  int64_t start_timestamp_ns = 0;
  std::string xplane_path;
  std::vector<std::string> notes;
  // A worker-side capture: the worker wrote the file (`path` is where it
  // lies under `logdir` when that is the worker's capture root too), with
  // this crc32 (zlib's) and size; `file_seen` when this side found it
  // there with that size. Its window on the worker's profiler clock, the
  // start asked for on that clock (on the job's clock when the capture
  // started on it: CaptureOptions::start_on_job_clock, or relayed by a
  // job's coordinator), and whether its clock offsets are the job's (else
  // this side's probes). `relayed_by`: who asked the worker on this
  // side's behalf (a job's coordinator), else empty.
  bool written_by_worker = false;
  std::string relayed_by;
  // The bytes of the worker's messages this side received (progress and
  // the file's facts: a small fraction of the file).
  uint64_t received_bytes = 0;
  uint32_t crc32 = 0;
  bool file_seen = false;
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  int64_t start_at_ns = 0;
  bool job_clock = false;
};

struct CaptureResult {
  std::string session;
  std::string session_dir;
  // Empty when it could not be written, or when no worker answered or
  // wrote a file (the empty session folder is then removed).
  std::string manifest_path;
  std::string manifest_error;         // why not, naming the path and the reason
  std::vector<WorkerResult> workers;  // in the order of the options
  bool cancelled = false;  // CaptureOptions::cancel was set before the end
  int answered() const {
    int n = 0;
    for (const WorkerResult& w : workers) n += w.ok ? 1 : 0;
    return n;
  }
  // Whether anything this side had to write (a worker's file, the
  // manifest) could not be written.
  bool write_failed() const {
    if (!manifest_error.empty()) return true;
    for (const WorkerResult& w : workers) {
      if (w.write_failed) return true;
    }
    return false;
  }
};

// Captures every worker at once. Fails only when the options are wrong or
// the session folder cannot be made; workers that fail are reported in the
// result (and the manifest), the others' files are complete. A manifest
// that cannot be written is reported in the result (manifest_error) and
// left absent, never partly written.
absl::StatusOr<CaptureResult> CaptureWorkers(const CaptureOptions& options);

// What a relay checks of a capture before it reaches any worker: every
// field CaptureWorkers checks but the workers and the log directory, and
// that the session is one folder name. INVALID_ARGUMENT naming the field.
absl::Status CheckRelayOptions(const CaptureOptions& options);

// A worker-side capture of `options.workers` with no session folder here
// (logdir unused): what a job's coordinator runs when it relays a capture
// for a client (with start_on_job_clock). Each result's `path` is
// `<session>/<file>` under that worker's capture root, checked to be one
// safe file name; nothing is looked for or written here. Invalid options
// fail every worker, saying why.
std::vector<WorkerResult> RelayWorkerCaptures(const CaptureOptions& options);

// Whether every worker has a capture root for worker-side captures (each
// asked in parallel; false when any cannot be reached or has none).
bool EveryWorkerWritesItsOwnFile(const std::vector<std::string>& workers,
                                 const ConnectOptions& connect);

// What answers at a worker's address, found without recording anything:
// Podscope's profiler service (GetInfo), else XProf's
// `tensorflow.ProfilerService` (a Terminate of a session no capture uses,
// which those servers accept and ignore). File › Capture… shows it per
// address before a capture.
struct WorkerProtocol {
  std::string address;
  std::string protocol;  // "podscope" or "xprof"; empty: `error` says why
  std::string error;     // naming the worker
  // A Podscope worker, as it says of itself (unchecked: not a file name).
  std::string host;
  int64_t pid = 0;
  std::string producer;
  bool writes_own_file = false;  // it has a capture root
};

// Every worker's protocol, in the order of `workers` (asked 16 at a time).
std::vector<WorkerProtocol> FindWorkerProtocols(
    const std::vector<std::string>& workers, const ConnectOptions& connect);

// The session id of the Terminate that finds an XProf server: the same on
// every call, so that a server that remembers ids keeps one at most.
inline constexpr char kProtocolCheckSession[] = "podscope-protocol-check";

struct RemoteDump {
  std::string path;  // under the worker's dump root: <session>/<file>
  uint64_t events = 0;
  uint64_t bytes = 0;
};

// Asks the worker at `address` to write its flight recorder's last seconds
// into the session folder `session` under its dump root
// (flight_recorder.h, ServerOptions::dump_root). The error names the
// worker and what it answered (no root, a refused name, recorder off).
absl::StatusOr<RemoteDump> RequestFlightRecorderDump(
    const std::string& address, const ConnectOptions& connect,
    const std::string& session, const std::string& reason);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_CAPTURE_H_
