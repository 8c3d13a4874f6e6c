// The profiler server: a gRPC service inside the process (port 9012 by
// default) through which `podscope capture` records this process remotely,
// streaming the trace to the client as it is produced. The seed's
// `start_server(9012)`. docs/profiler-service.md has the protocol and the
// security model.
#ifndef PODSCOPE_PROFILER_SERVER_H_
#define PODSCOPE_PROFILER_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::trace_format {
class RecordSink;
}

namespace podscope::profiler {

inline constexpr int kDefaultServerPort = 9012;

// What a server's captures record instead of this process's trace: for one
// process that hosts many servers, each standing for a worker of its own
// (a simulator of a pod, or the pod-scale capture benchmark, which serves
// hundreds of workers from a few processes). The server still does
// everything else as for the process's trace: the request's checks, the
// scheduled start, the worker-side file under its capture root, progress
// and the file's facts at the end. Windows of steps are refused (a source
// has no steps).
class CaptureSource {
 public:
  virtual ~CaptureSource() = default;
  // Starts a trace file written into `sink` (a TraceWriter over it) named
  // `session_id`, holding only events from `start_ns` (CLOCK_MONOTONIC)
  // on. One recording at a time.
  virtual absl::Status Start(std::unique_ptr<trace_format::RecordSink> sink,
                             const std::string& session_id,
                             int64_t start_ns) = 0;
  // Ends the recording; its file is complete (flushed, indexed) on return.
  virtual absl::Status Stop() = 0;
  // Events written by the current (or last) recording so far.
  virtual uint64_t events() const = 0;
};

struct ServerOptions {
  // Address to listen on. Empty means $PODSCOPE_PROFILER_BIND, else
  // 127.0.0.1: only this machine can connect unless told otherwise.
  // "0.0.0.0" or "[::]" listen everywhere; any non-loopback bind requires
  // a token.
  std::string bind_address;
  // Every call must carry `authorization: Bearer <token>`. Empty means
  // $PODSCOPE_PROFILER_TOKEN, else, on loopback, this user's token
  // (user_token.h: created at first use in a file only this user can
  // read). $PODSCOPE_PROFILER_TOKEN set and empty leaves a loopback server
  // open to every local user, with a warning on stderr.
  std::string token;
  // PEM files for TLS; both or neither. Empty means
  // $PODSCOPE_PROFILER_TLS_CERT / $PODSCOPE_PROFILER_TLS_KEY.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The longest capture a client may ask for (and the bound of a capture
  // that runs until stopped).
  int64_t max_duration_ms = 10 * 60 * 1000;
  // Clients attached to the running capture at once; more get
  // RESOURCE_EXHAUSTED.
  int max_clients = 8;
  // Bytes of trace kept in memory for clients that join a running capture
  // late; a capture that outgrows it ends early (its clients get a complete
  // file of what was recorded).
  int64_t max_capture_bytes = int64_t{1} << 30;
  // The folder under which XProf's Profile RPC may write
  // <session>/<host>.xplane.pb when a request names a repository_root (which
  // must lie inside it). Empty means $PODSCOPE_XPROF_REPOSITORY_ROOT; with
  // neither, such requests are refused and only emit_xspace answers.
  std::string xprof_repository_root;
  // The folder under which DumpFlightRecorder requests write
  // <session>/<host>.<pid>.podtrace (the request names the session only).
  // Empty means $PODSCOPE_DUMP_ROOT; with neither, such requests are
  // refused.
  std::string dump_root;
  // The folder under which worker-side captures write
  // <session>/<host>.<pid>.podtrace (`podscope capture --worker_writes`:
  // the request names the session only). Empty means
  // $PODSCOPE_CAPTURE_ROOT; with neither, such requests are refused. On a
  // pod, a folder every host shares (a mounted bucket).
  std::string capture_root;
  // The host name GetInfo reports, under which capture clients file this
  // process's trace. Empty means the machine's (gethostname); containers
  // that all share one host name can say which they are. Clients treat it
  // as untrusted and make it a safe file name themselves. It also names a
  // worker-side capture's file.
  std::string host_name;
  // Captures record this source instead of the process's trace (see
  // CaptureSource); null: the process's trace.
  std::shared_ptr<CaptureSource> capture_source;
};

class ProfilerServer {
 public:
  virtual ~ProfilerServer() = default;
  // The port actually bound (useful with port 0).
  virtual int port() const = 0;
  // "host:port" as clients should dial it.
  virtual std::string address() const = 0;
  // Ends running captures (their clients get complete files), then stops
  // serving. Idempotent; the destructor calls it.
  virtual void Stop() = 0;
};

// Starts serving on `port` (0: any free port), and the flight recorder
// when $PODSCOPE_FLIGHT_RECORDER asks for it (flight_recorder.h). Fails
// with a message naming the problem: a non-loopback bind without a token,
// a user token file that is refused, a port in use, TLS files that cannot
// be read, a malformed $PODSCOPE_FLIGHT_RECORDER.
absl::StatusOr<std::unique_ptr<ProfilerServer>> StartServer(
    int port = kDefaultServerPort, const ServerOptions& options = {});

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_SERVER_H_
