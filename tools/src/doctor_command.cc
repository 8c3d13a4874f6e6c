// `podscope doctor`: a live job's state from its coordinator, rank by rank,
// with the job doctor's verdict (docs/doctor.md).
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "command.h"
#include "flags.h"
#include "podscope/base/json.h"
#include "podscope/job/coordination.h"
#include "podscope/job/doctor_report.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope doctor --job HOST:PORT [--once] [--json]
                       [--interval_ms MS] [--tls_ca FILE]
                       [--tls_server_name NAME]

Shows a live job's state from its coordinator (rank 0's MASTER_ADDR:
MASTER_PORT): per rank its host and pid, its last heartbeat, the
collective it is in or last finished (per communicator group), the scope
its issuing thread is in and for how long, and the job doctor's verdict:
a stalled collective (some ranks entered it, others have not), a desync
(ranks called different collectives at one sequence number) or a dead
rank, each in one sentence that names the rank. See docs/doctor.md.

Refreshes every --interval_ms until the coordinator goes away (or once
with --once). The job token comes from $PODSCOPE_JOB_TOKEN, TLS from
--tls_ca or $PODSCOPE_JOB_TLS_CA.

Flags:
  --job HOST:PORT       The job's coordinator
  --once                Print the state once and exit
  --json                One JSON object per refresh (with --once: one)
  --interval_ms MS      Time between refreshes (default 1000)
  --tls_ca FILE         CA certificate the coordinator's TLS is checked
                        against
  --tls_server_name N   Name to check the certificate against
  -h, --help            Show this help

Exit status (of the last state seen): 0 healthy, 7 stalled, 8 desynced,
9 dead; 6 when the coordinator did not answer; 2 usage error.
)";

constexpr int kExitNoAnswer = 6;

int ExitFor(job::VerdictKind kind) {
  switch (kind) {
    case job::VerdictKind::kHealthy:
      return kExitOk;
    case job::VerdictKind::kStalled:
      return 7;
    case job::VerdictKind::kDesynced:
      return 8;
    case job::VerdictKind::kDead:
      return 9;
  }
  return kExitInternal;
}

double Seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

void PrintText(const job::JobStateView& v, const std::string& address,
               std::FILE* out) {
  absl::FPrintF(out, "job at %s: %s\n", address, job::DoctorHeadline(v));
  if (!v.verdict.empty()) absl::FPrintF(out, "  %s\n", v.verdict);
  if (!v.job_status.ok() && v.job_status.message() != v.verdict) {
    absl::FPrintF(out, "  job failed: %s\n", v.job_status.message());
  }
  absl::FPrintF(out, "%-5s %-20s %-8s %-6s %-10s %-40s %s\n", "rank", "host",
                "pid", "step", "heartbeat", "collective", "scope");
  for (const job::DoctorRow& r : job::DoctorRows(v)) {
    if (!r.registered) {
      absl::FPrintF(out, "%-5d (not registered)\n", r.rank);
      continue;
    }
    absl::FPrintF(out, "%-5d %-20s %-8d %-6s %-10s %-40s %s\n", r.rank, r.host,
                  r.pid, r.step, r.heartbeat, r.collective, r.scope);
  }
}

void StringArray(base::JsonWriter& w, const std::vector<std::string>& v) {
  w.BeginArray(base::JsonLayout::kOneLine);
  for (const std::string& s : v) w.String(s);
  w.EndArray();
}

void RankJson(base::JsonWriter& w, const job::RankView& r, int64_t now) {
  w.BeginObject();
  w.Field("rank", static_cast<int64_t>(r.rank));
  w.Field("registered", r.registered);
  w.Field("host", r.host);
  w.Field("pid", r.pid);
  w.Field("heartbeat_age_ms", r.heartbeat_age_ms);
  w.Field("leaving", r.leaving);
  if (r.state.has_value()) {
    const job::RankState& s = *r.state;
    w.Field("step", s.step);
    if (s.issuer.has_value()) {
      w.Key("issuer").BeginObject();
      w.Field("tid", s.issuer->tid);
      w.Field("main_thread", s.issuer->main_thread);
      w.Key("scopes");
      StringArray(w, s.issuer->scopes);
      if (s.issuer->innermost_since_ns != 0) {
        w.Field("in_scope_s", Seconds(now - s.issuer->innermost_since_ns));
      }
      if (s.issuer->last_event_ns != 0) {
        w.Field("silent_s", Seconds(now - s.issuer->last_event_ns));
      }
      w.EndObject();
    }
    w.Key("groups").BeginArray();
    for (const job::GroupState& g : s.groups) {
      w.BeginObject();
      w.Field("group", g.group);
      w.Field("last_entered", g.last_entered);
      w.Field("last_finished", g.last_finished);
      w.Field("in_flight", g.last_finished < g.last_entered);
      w.Field("kind", g.last_call.kind);
      if (!g.last_call.dtype.empty()) w.Field("dtype", g.last_call.dtype);
      w.Field("count", g.last_call.count);
      if (!g.last_call.op.empty()) w.Field("op", g.last_call.op);
      if (g.last_call.root >= 0) {
        w.Field("root", static_cast<int64_t>(g.last_call.root));
      }
      w.Key("scopes");
      StringArray(w, g.last_call.scopes);
      w.Field("entered_s_ago", Seconds(now - g.last_call.entered_ns));
      w.Field("median_ms", static_cast<double>(g.median_ns) / 1e6);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

void PrintJson(const job::JobStateView& v, const std::string& address,
               std::FILE* out) {
  std::string text;
  base::JsonWriter w(&text);
  w.BeginObject();
  w.Field("coordinator", address);
  w.Field("verdict", job::VerdictName(v.verdict_kind));
  w.Field("sentence", v.verdict);
  if (!v.job_status.ok())
    w.Field("job_error", std::string(v.job_status.message()));
  w.Key("ranks").BeginArray();
  for (const job::RankView& r : v.ranks) RankJson(w, r, v.now_ns);
  w.EndArray();
  w.EndObject();
  text.push_back('\n');
  std::fputs(text.c_str(), out);
}

int Run(std::span<const std::string> args, const CommandIo& io) {
  std::string address, tls_ca, tls_name;
  bool once = false, json = false;
  int64_t interval_ms = 1000;
  FlagParser flags;
  flags.AddString("job", &address);
  flags.AddBool("once", &once);
  flags.AddBool("json", &json);
  flags.AddInt("interval_ms", &interval_ms, 50, 3'600'000);
  flags.AddString("tls_ca", &tls_ca);
  flags.AddString("tls_server_name", &tls_name);
  std::vector<std::string> positional;
  bool help = false;
  if (absl::Status s = flags.Parse(args, &positional, &help); !s.ok()) {
    return UsageError(io, "doctor", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kDoctorCommand);
  if (address.empty()) return UsageError(io, "doctor", "--job is required");
  if (!positional.empty()) {
    return UsageError(
        io, "doctor",
        absl::StrCat("unexpected argument '", positional[0], "'"));
  }
  auto client = job::ConnectToJob(address, "", tls_ca, tls_name);
  if (!client.ok()) {
    return UsageError(io, "doctor", std::string(client.status().message()));
  }
  const bool tty = !json && isatty(fileno(io.out));
  int status = kExitNoAnswer;
  while (true) {
    auto view = (*client)->JobState(absl::Seconds(5));
    if (!view.ok()) {
      absl::FPrintF(io.err, "podscope doctor: %s\n", view.status().message());
      return status;
    }
    if (tty) std::fputs("\033[H\033[J", io.out);
    if (json) {
      PrintJson(*view, address, io.out);
    } else {
      PrintText(*view, address, io.out);
    }
    std::fflush(io.out);
    status = ExitFor(view->verdict_kind);
    if (once) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
}

}  // namespace

const Command kDoctorCommand = {
    "doctor",
    "Show a live job's ranks and whether a collective is stalled or desynced",
    kHelp, Run};

}  // namespace podscope::tools
