// `podscope capture`: records many workers' profiler servers at once into
// one session folder (see <podscope/profiler/capture.h>).
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "command.h"
#include "flags.h"
#include "podscope/job/profilers.h"
#include "podscope/profiler/capture.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope capture --service_addr HOST:PORT[,HOST:PORT...] --logdir DIR
       podscope capture --service_addr @FILE --logdir DIR
       podscope capture --job HOST:PORT --logdir DIR
                        [--duration_ms N] [--session NAME] [--token T]
                        [--tls_ca FILE] [--tls_server_name NAME]
                        [--sampling_hz N] [--level N]
                        [--host_tracer_level N] [--device_tracer_level N]
                        [--python_tracer_level N] [--also_xplane]
                        [--align wallclock|rpc|collectives]
                        [--worker_writes | --stream] [--steps FIRST:LAST]
                        [--start_lead_ms N]

Asks every worker's profiler server (podscope::profiler::StartServer, port
9012 by default) to record for N milliseconds, all at once, and writes
  DIR/SESSION/<host>.<pid>.podtrace   one per worker, streamed as recorded
  DIR/SESSION/manifest.json           who was asked, who answered, errors,
                                      clock offsets
Each worker's clock offset to this machine's clock is measured before and
after the capture (NTP-style probes, the fastest round trip kept) and stored
in its file, so the viewer puts every host on one timeline.

Workers that serve XProf's tensorflow.ProfilerService instead (JAX's
jax.profiler.start_server, TensorFlow's tf.profiler.experimental.server,
PyTorch/XLA's xp.start_server) are asked for one Profile that starts on
every host at the same moment; each answer's XSpace becomes
DIR/SESSION/<host>.podtrace. Their clocks are lined up by the Profile
call's times (a bound) and, tighter, by the collectives every host ran
(--align); the manifest says which method aligned each host and how far
to trust it.

With --worker_writes each worker writes its own file instead,
  ROOT/SESSION/<host>.<pid>.podtrace
under the capture root it was started with (PODSCOPE_CAPTURE_ROOT, or
ServerOptions::capture_root; a worker without one refuses), and this side
receives only progress and each file's name, size and crc32: the way to
capture a pod, whose hosts would send more than one client can take. When
ROOT is a folder every host shares and DIR is the same folder, the
manifest lands beside the files. Every worker starts at the same instant,
--start_lead_ms after the capture began (later when reaching every worker
takes longer), each on its own clock as the probes map it; each file carries those probes (or its job's clock) as its
clock offsets. --job uses worker-side capture when every rank has a
capture root (--stream streams instead).

--steps FIRST:LAST records, on every worker, from the beginning of step
FIRST to the end of step LAST as the program marks its steps
(PODSCOPE_STEP); --duration_ms then bounds the whole wait (default 10
minutes with --steps).

Flags:
  --service_addr LIST   Workers, comma-separated (or --job); @FILE reads
                        them from FILE, one HOST:PORT a line ('#' starts
                        a comment), at most 65536
  --job HOST:PORT       Every rank of a job, from its coordinator
                        (MASTER_ADDR:MASTER_PORT; token: --token, else
                        $PODSCOPE_JOB_TOKEN); ranks go into the manifest
  --logdir DIR          Where the session folder goes (required)
  --duration_ms N       How long to record, 1..3600000 (default 1000)
  --session NAME        The session folder's name (default: UTC time,
                        YYYYMMDD-HHMMSS)
  --token T             Token for servers that require one (default:
                        $PODSCOPE_PROFILER_TOKEN, else for loopback
                        workers this user's token file)
  --tls_ca FILE         Speak TLS; FILE is the PEM certificate (or its CA)
                        the servers present
  --tls_server_name N   Name to check the certificate against instead of
                        the address's host
  --sampling_hz N       CPU stack samples per second per thread, 0..10000
                        (default 0: off)
  --level N             1 critical, 2 info (default), 3 verbose
  --probes N            Clock probes per measurement, 1..1000 (default 16)
  --connect_timeout_ms N  How long to wait for each worker (default 5000)
  --max_message_mb N    Largest answer accepted from a worker, 1..2047
                        MiB (default 256); an XProf worker sends its whole
                        trace in one
XProf workers:
  --host_tracer_level N    0 off, 1 user scopes, 2 default, 3 verbose
  --device_tracer_level N  0 off, 1 on (default)
  --python_tracer_level N  0 off (default), 1 on
  --also_xplane         Also keep DIR/plugins/profile/SESSION/<host>.xplane.pb,
                        the run folder TensorBoard and XProf open
  --align METHOD        wallclock (trust the hosts' clocks), rpc (bounded
                        by the Profile call's times), collectives (fitted
                        to collective ends seen on every host); default:
                        the best that works
Pods:
  --worker_writes       Each worker writes its own file under its capture
                        root; this side gets progress and the file's facts
  --stream              Stream every worker's trace here (the default,
                        except for --job when every rank has a root)
  --steps FIRST:LAST    Record steps FIRST..LAST on every worker
  --start_lead_ms N     The common start: for worker-side captures N ms
                        after the capture began (later when reaching
                        every worker takes longer); for XProf workers N
                        ms after every worker was reached; 0..60000
                        (default 100)
  -h, --help            Show this help

Exit codes: 0 every worker answered with a complete file, 5 some did not
(each is named with the reason; the others' files are complete), 6 none
did, 2 usage error, 4 the session folder, a worker's file or the manifest
cannot be written here (a full disk, say; files end at their last whole
record, and a manifest is never left half-written).
)";

constexpr int kExitSomeFailed = 5;
constexpr int kExitNoneAnswered = 6;

constexpr size_t kMaxWorkers = 65536;
constexpr size_t kMaxAddressFileBytes = 4 << 20;

// Whether `addr` can be a worker: HOST:PORT with a port 1..65535 and no
// byte a host name cannot hold.
bool IsWorkerAddress(const std::string& addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || addr.size() > 300) {
    return false;
  }
  const std::string port = addr.substr(colon + 1);
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  const int n = std::atoi(port.c_str());
  if (n < 1 || n > 65535) return false;
  for (char c : addr.substr(0, colon)) {
    if (c <= ' ' || c >= 127 || c == '/' || c == '@' || c == ',') return false;
  }
  return true;
}

// --service_addr @FILE: the addresses in FILE, one a line.
absl::StatusOr<std::string> ReadAddressFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--service_addr @", path, ": cannot be opened"));
  }
  std::string text(kMaxAddressFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxAddressFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--service_addr @", path, ": larger than ",
                     kMaxAddressFileBytes >> 20, " MiB"));
  }
  std::string list;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    const std::string addr(absl::StripAsciiWhitespace(line));
    if (addr.empty()) continue;
    absl::StrAppend(&list, list.empty() ? "" : ",", addr);
  }
  return list;
}

// Splits --service_addr into o->workers. Returns the exit code of a usage
// error.
std::optional<int> ParseWorkers(std::string addrs, const CommandIo& io,
                                profiler::CaptureOptions* o) {
  if (!addrs.empty() && addrs.front() == '@') {
    auto list = ReadAddressFile(addrs.substr(1));
    if (!list.ok()) {
      return UsageError(io, "capture", std::string(list.status().message()));
    }
    if (list->empty()) {
      return UsageError(io, "capture",
                        "--service_addr " + addrs + ": holds no address");
    }
    addrs = *std::move(list);
  }
  for (absl::string_view piece :
       absl::StrSplit(addrs, ',', absl::SkipWhitespace())) {
    const std::string addr(absl::StripAsciiWhitespace(piece));
    if (!IsWorkerAddress(addr)) {
      return UsageError(io, "capture",
                        "worker '" + addr.substr(0, 100) +
                            "' is not HOST:PORT (a port 1..65535)");
    }
    if (o->workers.size() == kMaxWorkers) {
      return UsageError(io, "capture",
                        absl::StrCat("more than ", kMaxWorkers, " workers"));
    }
    o->workers.push_back(addr);
  }
  return std::nullopt;
}

// Reads and checks the flags into *o, and --job into *job. Returns the
// exit code when the command ends here (help, or a usage error).
std::optional<int> ParseCaptureFlags(std::span<const std::string> args,
                                     const CommandIo& io,
                                     profiler::CaptureOptions* o,
                                     std::string* job, bool* stream_only) {
  std::string addrs, logdir, session, token, tls_ca, tls_name;
  // 0: not given (1 s, or 10 minutes of waiting for --steps).
  int64_t duration_ms = 0, sampling_hz = 0, level = 2, probes = 16;
  int64_t connect_ms = 5000, max_message_mb = 256;
  int64_t host_level = 2, device_level = 1, python_level = 0;
  bool also_xplane = false, worker_writes = false, stream = false;
  std::string align = "best", steps;
  int64_t start_lead_ms = 100;
  FlagParser flags;
  flags.AddBool("worker_writes", &worker_writes);
  flags.AddBool("stream", &stream);
  flags.AddString("steps", &steps);
  flags.AddInt("start_lead_ms", &start_lead_ms, 0, 60'000);
  flags.AddInt("max_message_mb", &max_message_mb, 1, 2047);
  flags.AddInt("host_tracer_level", &host_level, 0, 3);
  flags.AddInt("device_tracer_level", &device_level, 0, 1);
  flags.AddInt("python_tracer_level", &python_level, 0, 1);
  flags.AddBool("also_xplane", &also_xplane);
  flags.AddString("align", &align);
  flags.AddString("service_addr", &addrs);
  flags.AddString("job", job);
  flags.AddString("logdir", &logdir);
  flags.AddString("session", &session);
  flags.AddString("token", &token);
  flags.AddString("tls_ca", &tls_ca);
  flags.AddString("tls_server_name", &tls_name);
  flags.AddInt("duration_ms", &duration_ms, 1, 3'600'000);
  flags.AddInt("sampling_hz", &sampling_hz, 0, 10000);
  flags.AddInt("level", &level, 1, 3);
  flags.AddInt("probes", &probes, 1, 1000);
  flags.AddInt("connect_timeout_ms", &connect_ms, 1, 600'000);
  std::vector<std::string> positional;
  bool help = false;
  if (absl::Status s = flags.Parse(args, &positional, &help); !s.ok()) {
    return UsageError(io, "capture", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kCaptureCommand);
  if (!positional.empty()) {
    return UsageError(io, "capture",
                      "unexpected argument '" + positional[0] + "'");
  }
  if (!job->empty() && !addrs.empty()) {
    return UsageError(io, "capture", "give --job or --service_addr, not both");
  }
  if (addrs.empty() && job->empty())
    return UsageError(io, "capture", "--service_addr is required");
  if (logdir.empty()) return UsageError(io, "capture", "--logdir is required");
  if (std::optional<int> error = ParseWorkers(addrs, io, o)) return error;
  if (o->workers.empty() && job->empty())
    return UsageError(io, "capture", "--service_addr is empty");
  o->logdir = logdir;
  o->duration_ms = duration_ms != 0 ? duration_ms : 1000;
  o->session = session;
  o->connect.token = token;
  o->connect.tls_ca_file = tls_ca;
  o->connect.tls_server_name = tls_name;
  o->connect.connect_timeout_ms = connect_ms;
  o->sampling_hz = static_cast<int>(sampling_hz);
  o->level = static_cast<int>(level);
  o->clock_probes = static_cast<int>(probes);
  o->connect.max_message_mb = max_message_mb;
  o->host_tracer_level = static_cast<int>(host_level);
  o->device_tracer_level = static_cast<int>(device_level);
  o->python_tracer_level = static_cast<int>(python_level);
  o->also_xplane = also_xplane;
  if (align != "wallclock" && align != "rpc" && align != "collectives" &&
      align != "best") {
    return UsageError(
        io, "capture",
        "--align must be wallclock, rpc or collectives, not '" + align + "'");
  }
  o->align = align;
  if (worker_writes && stream) {
    return UsageError(io, "capture", "give --worker_writes or --stream");
  }
  o->worker_writes = worker_writes;
  *stream_only = stream;
  o->start_lead_ms = start_lead_ms;
  if (!steps.empty()) {
    const size_t colon = steps.find(':');
    int64_t first = -1, last = -1;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(steps.substr(0, colon), &first) ||
        !absl::SimpleAtoi(steps.substr(colon + 1), &last) || first < 0 ||
        last < first) {
      return UsageError(io, "capture",
                        "--steps must be FIRST:LAST with 0 <= FIRST <= LAST, "
                        "not '" +
                            steps + "'");
    }
    o->by_steps = true;
    o->first_step = first;
    o->last_step = last;
    if (duration_ms == 0) o->duration_ms = 600'000;
  }
  return std::nullopt;
}

// How an XProf worker's clock was aligned, in words.
std::string AlignmentText(const profiler::WorkerResult& w) {
  std::string text = "aligned by " + w.alignment;
  if (w.alignment_uncertainty_ns < 0) {
    absl::StrAppend(&text, " (uncertainty not known: as good as NTP)");
  } else {
    absl::StrAppend(&text, " +-", FormatDuration(w.alignment_uncertainty_ns));
    if (w.alignment == "collectives") {
      absl::StrAppend(&text, " (between hosts +-",
                      FormatDuration(w.alignment_relative_uncertainty_ns), ")");
    }
  }
  if (!w.alignment_note.empty()) absl::StrAppend(&text, "; ", w.alignment_note);
  for (const std::string& note : w.notes) absl::StrAppend(&text, "; ", note);
  if (!w.xplane_path.empty()) absl::StrAppend(&text, "; also ", w.xplane_path);
  return text;
}

// One line per worker, the manifest, and the exit code the outcome earns.
int ReportCapture(const profiler::CaptureResult& result, const CommandIo& io) {
  const int answered = result.answered();
  const int asked = static_cast<int>(result.workers.size());
  std::fprintf(io.out, "session %s: %d of %d workers answered\n",
               result.session_dir.c_str(), answered, asked);
  for (const profiler::WorkerResult& w : result.workers) {
    if (w.ok && w.protocol == "xprof") {
      std::fprintf(io.out, "  ok      %-22s %s  %llu events, xprof, %s\n",
                   w.address.c_str(), w.path.c_str(),
                   static_cast<unsigned long long>(w.events),
                   AlignmentText(w).c_str());
    } else if (w.ok && w.written_by_worker) {
      std::fprintf(io.out,
                   "  ok      %-22s %s  %llu events, %llu dropped, %s, "
                   "written by the worker%s, crc32 %08x, clock by %s\n",
                   w.address.c_str(), w.path.c_str(),
                   static_cast<unsigned long long>(w.events),
                   static_cast<unsigned long long>(w.dropped),
                   FormatBytes(w.bytes).c_str(),
                   w.file_seen ? "" : " (not visible here)", w.crc32,
                   w.job_clock ? "the job" : "probes");
    } else if (w.ok) {
      const profiler::ClockEstimate& c = w.clock.front();
      std::fprintf(io.out,
                   "  ok      %-22s %s  %llu events, %llu dropped, clock "
                   "offset %+.3f ms +-%.1f us, drift %+.1f ppm\n",
                   w.address.c_str(), w.path.c_str(),
                   static_cast<unsigned long long>(w.events),
                   static_cast<unsigned long long>(w.dropped),
                   static_cast<double>(c.offset_ns) / 1e6,
                   static_cast<double>(c.uncertainty_ns) / 1e3, w.drift_ppm);
    } else {
      std::fprintf(
          io.out, "  FAILED  %-22s %s%s\n", w.address.c_str(), w.error.c_str(),
          w.path.empty() ? "" : (" (partial file: " + w.path + ")").c_str());
    }
  }
  if (!result.manifest_path.empty()) {
    std::fprintf(io.out, "manifest: %s\n", result.manifest_path.c_str());
  } else if (result.manifest_error.empty()) {
    // Nothing was recorded: the library wrote no manifest and removed the
    // empty session folder.
    std::fprintf(io.out, "nothing recorded: no session written\n");
  } else {
    std::fprintf(io.err, "podscope capture: manifest not written: %s\n",
                 result.manifest_error.c_str());
  }
  // This side's failure to write (a full disk) outranks the workers'.
  if (result.write_failed()) return kExitInternal;
  if (answered == asked) return kExitOk;
  return answered == 0 ? kExitNoneAnswered : kExitSomeFailed;
}

int Run(std::span<const std::string> args, const CommandIo& io) {
  profiler::CaptureOptions o;
  std::string job;
  std::string job_coordinator;  // the job's own (job may be a rendezvous)
  bool stream_only = false;
  if (std::optional<int> done =
          ParseCaptureFlags(args, io, &o, &job, &stream_only)) {
    return *done;
  }
  if (!job.empty()) {
    if (absl::Status s =
            podscope::job::ResolveJobWorkers(job, &o, &job_coordinator);
        !s.ok()) {
      std::fprintf(io.err, "podscope capture: --job %s: %s\n", job.c_str(),
                   std::string(s.message()).c_str());
      return kExitNoneAnswered;
    }
  }
  o.progress = [&](const profiler::CaptureProgress& p) {
    const std::string line = absl::StrCat(
        "capturing ", p.workers, " worker", p.workers == 1 ? "" : "s", ": ",
        p.streaming, " streaming, ", p.finished, " done, ", p.failed,
        " failed; ", p.events, " events, ", FormatBytes(p.bytes), ", ",
        FormatDuration(p.elapsed_ms * 1'000'000));
    if (io.err_is_tty) {
      std::fprintf(io.err, "\r%s\033[K", line.c_str());
    }
  };
  // A job whose every rank can write its own file is recorded through its
  // coordinator, which relays the start and the stop to the ranks: one
  // call from here.
  if (!job.empty() && !stream_only) {
    profiler::CaptureOptions relayed = o;
    podscope::job::RelayThroughCoordinator(job_coordinator, &relayed);
    auto result = profiler::CaptureWorkers(relayed);
    if (io.err_is_tty) std::fprintf(io.err, "\r\033[K");
    if (result.ok()) return ReportCapture(*result, io);
    const absl::Status& s = result.status();
    if (!podscope::job::CaptureFromHereInstead(s, o.worker_writes)) {
      std::fprintf(io.err, "podscope capture: --job %s: %s\n", job.c_str(),
                   std::string(s.message()).c_str());
      return s.code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                            : kExitNoneAnswered;
    }
    std::fprintf(io.err, "podscope capture: %s; %s\n",
                 std::string(s.message()).c_str(),
                 o.worker_writes ? "capturing every rank from here"
                                 : "streaming every rank here instead");
  }
  auto result = profiler::CaptureWorkers(o);
  if (io.err_is_tty) std::fprintf(io.err, "\r\033[K");
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kInvalidArgument) {
      return UsageError(io, "capture", std::string(result.status().message()));
    }
    std::fprintf(io.err, "podscope capture: %s\n",
                 std::string(result.status().message()).c_str());
    return kExitInternal;
  }
  return ReportCapture(*result, io);
}

}  // namespace

const Command kCaptureCommand = {
    "capture", "Capture many workers' profiler servers into one session folder",
    kHelp, Run};

}  // namespace podscope::tools
