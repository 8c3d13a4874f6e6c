// `podscope launch`: starts a job's worker processes on this node with
// torchrun's flags and environment (see <podscope/job/launch.h>).
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "command.h"
#include "flags.h"
#include "podscope/job/launch.h"

namespace podscope::tools {
namespace {

constexpr std::string_view kHelp =
    R"(Usage: podscope launch [--nnodes N] [--node_rank R] [--nproc_per_node P]
                       [--rdzv_endpoint HOST:PORT] [--max_restarts 0]
                       [--failure_wait_ms MS] [--grace_ms MS]
                       [--tls_ca FILE | --insecure]
                       [--on_stall report|fail] PROGRAM [ARGS...]

Starts P copies of PROGRAM on this node, as torchrun does, each with
  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
  GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, PODSCOPE_LAUNCHER=podscope
(and PODSCOPE_JOB_TOKEN for jobs across hosts), so that Job::Init() in the
program finds the job. Rank 0 hosts the job's coordinator at
MASTER_ADDR:MASTER_PORT.

Several nodes: run one launcher per node with the same --nnodes and
--rdzv_endpoint (node 0's address as the others reach it, and a free port);
node 0's launcher hosts the rendezvous there. Ranks are numbered node by
node. Across hosts every launcher needs the same secret in
PODSCOPE_JOB_TOKEN, and the rendezvous and the job's coordinator speak TLS:
node 0's launcher and rank 0 serve the certificate in
PODSCOPE_JOB_TLS_CERT / PODSCOPE_JOB_TLS_KEY, every node trusts the CA
given by --tls_ca (or PODSCOPE_JOB_TLS_CA; PODSCOPE_JOB_TLS_NAME is the
name checked). --insecure runs them without TLS, for trusted networks only:
the job token then crosses the network in clear.

Each output line of a worker is prefixed "[rank N] ". SIGINT and SIGTERM
are forwarded to the workers. When a worker fails, the others have
--failure_wait_ms to end by themselves (programs using Job::Init notice a
dead peer within about 7 s, report it and close their traces), then are
sent SIGTERM (SIGKILL after the grace period). The launcher says which
rank failed and how (a hung, SIGSTOPped rank too), and exits with the
first failing worker's status (exit code, or 128 + signal number; 75 is a
worker that stopped because a peer died).

Flags:
  --nnodes N            Nodes in the job (default 1)
  --node_rank R         This node's index, 0..N-1 (default 0)
  --nproc_per_node P    Workers on this node (default 1)
  --rdzv_endpoint H:P   The rendezvous (required with --nnodes > 1)
  --max_restarts N      Only 0 (a failed worker ends the job)
  --failure_wait_ms MS  After a failure, time the others have to end by
                        themselves before SIGTERM (default 10000)
  --grace_ms MS         Time between SIGTERM and SIGKILL (default 5000)
  --tls_ca FILE         CA certificate(s) the job's TLS is checked against
                        (passed to the workers as PODSCOPE_JOB_TLS_CA)
  --insecure            Across hosts without TLS (trusted networks only;
                        passed to the workers as PODSCOPE_JOB_INSECURE=1)
  --on_stall report|fail  What the job doctor's stall or desync verdict
                        does (docs/doctor.md): report keeps the job waiting
                        and rank 0 prints the verdict (default); fail ends
                        the job with it, naming the rank (passed to the
                        workers as PODSCOPE_ON_STALL)
  -h, --help            Show this help
Dashes may replace underscores (--nproc-per-node), as torchrun allows.
)";

bool TakesValue(std::string_view name) {
  return name == "nnodes" || name == "node_rank" || name == "nproc_per_node" ||
         name == "rdzv_endpoint" || name == "max_restarts" ||
         name == "grace_ms" || name == "failure_wait_ms" || name == "tls_ca" ||
         name == "on_stall";
}

// Launcher flags come first; everything from PROGRAM on is the program's.
// Splits them: the launcher's flags, normalised to --name value pairs, and
// the index of PROGRAM in `args`; or the usage error.
absl::StatusOr<size_t> SplitLauncherFlags(std::span<const std::string> args,
                                          std::vector<std::string>* flag_args) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") return i + 1;
    if (a == "-h" || a == "--help") {
      flag_args->push_back(a);
      continue;
    }
    if (a.rfind("--", 0) != 0) break;
    std::string name = a.substr(2);
    std::string value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    for (char& c : name) c = c == '-' ? '_' : c;
    if (name == "insecure" && !inline_value) {
      flag_args->push_back("--insecure");
      continue;
    }
    if (!TakesValue(name)) {
      return absl::InvalidArgumentError("unknown flag '--" + name + "'");
    }
    flag_args->push_back("--" + name);
    if (inline_value) {
      flag_args->push_back(value);
    } else if (i + 1 < args.size()) {
      flag_args->push_back(args[++i]);
    } else {
      return absl::InvalidArgumentError("--" + name + " needs a value");
    }
  }
  return i;
}

int Run(std::span<const std::string> args, const CommandIo& io) {
  std::vector<std::string> flag_args;
  absl::StatusOr<size_t> program = SplitLauncherFlags(args, &flag_args);
  if (!program.ok()) {
    return UsageError(io, "launch", std::string(program.status().message()));
  }
  const size_t i = *program;
  int64_t nnodes = 1, node_rank = 0, nproc = 1, max_restarts = 0;
  int64_t grace_ms = 5000, failure_wait_ms = 10000;
  std::string rdzv, tls_ca, on_stall;
  bool insecure = false;
  FlagParser flags;
  flags.AddInt("nnodes", &nnodes, 1, 100000);
  flags.AddInt("node_rank", &node_rank, 0, 99999);
  flags.AddInt("nproc_per_node", &nproc, 1, 4096);
  flags.AddInt("max_restarts", &max_restarts, 0, 1000);
  flags.AddInt("grace_ms", &grace_ms, 0, 3'600'000);
  flags.AddInt("failure_wait_ms", &failure_wait_ms, 0, 3'600'000);
  flags.AddString("rdzv_endpoint", &rdzv);
  flags.AddString("tls_ca", &tls_ca);
  flags.AddBool("insecure", &insecure);
  flags.AddString("on_stall", &on_stall);
  std::vector<std::string> positional;
  bool help = false;
  if (absl::Status s = flags.Parse(flag_args, &positional, &help); !s.ok()) {
    return UsageError(io, "launch", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kLaunchCommand);
  if (i >= args.size()) {
    return UsageError(io, "launch", "no PROGRAM to run");
  }
  if (node_rank >= nnodes) {
    return UsageError(
        io, "launch",
        absl::StrCat("--node_rank ", node_rank, " is outside 0..", nnodes - 1));
  }
  if (nnodes > 1 && rdzv.empty()) {
    return UsageError(io, "launch",
                      "--nnodes > 1 needs --rdzv_endpoint HOST:PORT");
  }
  if (!on_stall.empty() && on_stall != "report" && on_stall != "fail") {
    return UsageError(
        io, "launch",
        absl::StrCat("--on_stall '", on_stall, "': expected report or fail"));
  }
  if (max_restarts != 0) {
    return UsageError(io, "launch",
                      "--max_restarts: only 0 is supported (a failed worker "
                      "ends the job)");
  }
  job::LaunchOptions o;
  o.nnodes = static_cast<int>(nnodes);
  o.node_rank = static_cast<int>(node_rank);
  o.nproc_per_node = static_cast<int>(nproc);
  o.rdzv_endpoint = rdzv;
  o.tls_ca_file = tls_ca;
  o.insecure = insecure;
  o.grace_period = absl::Milliseconds(grace_ms);
  o.failure_wait = absl::Milliseconds(failure_wait_ms);
  if (!on_stall.empty()) o.extra_env.push_back("PODSCOPE_ON_STALL=" + on_stall);
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  o.out = io.out;
  o.err = io.err;
  auto result = job::RunLauncher(o);
  if (!result.ok()) {
    std::fprintf(io.err, "podscope launch: %s\n",
                 std::string(result.status().message()).c_str());
    return result.status().code() == absl::StatusCode::kInvalidArgument
               ? kExitUsage
               : kExitInternal;
  }
  if (result->exit_code != 0) {
    std::fprintf(io.err, "podscope launch: job failed: %s (exit status %d)\n",
                 result->message.c_str(), result->exit_code);
  }
  return result->exit_code;
}

}  // namespace

const Command kLaunchCommand = {
    "launch", "Start a job's worker processes on this node (like torchrun)",
    kHelp, Run};

}  // namespace podscope::tools
