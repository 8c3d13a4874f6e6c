// `podscope capture`: records many workers' profiler servers at once into
// one session folder (see <podscope/profiler/capture.h>).
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "command.h"
#include "flags.h"
#include "podscope/job/profilers.h"
#include "podscope/profiler/capture.h"
#include "text_format.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope capture --service_addr HOST:PORT[,HOST:PORT...] --logdir DIR
       podscope capture --job HOST:PORT --logdir DIR
                        [--duration_ms N] [--session NAME] [--token T]
                        [--tls_ca FILE] [--tls_server_name NAME]
                        [--sampling_hz N] [--level N]

Asks every worker's profiler server (podscope::profiler::StartServer, port
9012 by default) to record for N milliseconds, all at once, and writes
  DIR/SESSION/<host>.<pid>.podtrace   one per worker, streamed as recorded
  DIR/SESSION/manifest.json           who was asked, who answered, errors,
                                      clock offsets
Each worker's clock offset to this machine's clock is measured before and
after the capture (NTP-style probes, the fastest round trip kept) and stored
in its file, so the viewer puts every host on one timeline.

Flags:
  --service_addr LIST   Workers, comma-separated (or --job)
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
  -h, --help            Show this help

Exit codes: 0 every worker answered with a complete file, 5 some did not
(each is named with the reason; the others' files are complete), 6 none
did, 2 usage error, 4 the session folder, a worker's file or the manifest
cannot be written here (a full disk, say; files end at their last whole
record, and a manifest is never left half-written).
)";

constexpr int kExitSomeFailed = 5;
constexpr int kExitNoneAnswered = 6;

// Splits --service_addr into o->workers. Returns the exit code of a usage
// error.
std::optional<int> ParseWorkers(const std::string& addrs, const CommandIo& io,
                                profiler::CaptureOptions* o) {
  for (absl::string_view piece :
       absl::StrSplit(addrs, ',', absl::SkipWhitespace())) {
    std::string addr(piece);
    while (!addr.empty() && addr.front() == ' ') addr.erase(0, 1);
    while (!addr.empty() && addr.back() == ' ') addr.pop_back();
    if (addr.find(':') == std::string::npos) {
      return UsageError(io, "capture",
                        "worker '" + addr + "' has no port (HOST:PORT)");
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
                                     std::string* job) {
  std::string addrs, logdir, session, token, tls_ca, tls_name;
  int64_t duration_ms = 1000, sampling_hz = 0, level = 2, probes = 16;
  int64_t connect_ms = 5000;
  FlagParser flags;
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
  o->duration_ms = duration_ms;
  o->session = session;
  o->connect.token = token;
  o->connect.tls_ca_file = tls_ca;
  o->connect.tls_server_name = tls_name;
  o->connect.connect_timeout_ms = connect_ms;
  o->sampling_hz = static_cast<int>(sampling_hz);
  o->level = static_cast<int>(level);
  o->clock_probes = static_cast<int>(probes);
  return std::nullopt;
}

// One line per worker, the manifest, and the exit code the outcome earns.
int ReportCapture(const profiler::CaptureResult& result, const CommandIo& io) {
  const int answered = result.answered();
  const int asked = static_cast<int>(result.workers.size());
  std::fprintf(io.out, "session %s: %d of %d workers answered\n",
               result.session_dir.c_str(), answered, asked);
  for (const profiler::WorkerResult& w : result.workers) {
    if (w.ok) {
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
  if (std::optional<int> done = ParseCaptureFlags(args, io, &o, &job)) {
    return *done;
  }
  if (!job.empty()) {
    if (absl::Status s = podscope::job::ResolveJobWorkers(job, &o); !s.ok()) {
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
