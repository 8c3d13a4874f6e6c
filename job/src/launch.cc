// RunLauncher and Launch (launch.h): the rendezvous of several nodes'
// launchers, the workers' environment, and supervision.

#include "podscope/job/launch.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/job/coordination.h"
#include "podscope/job/environment.h"
#include "podscope/job/keys.h"
#include "src/supervisor.h"

extern char** environ;

namespace podscope::job {
namespace {

constexpr const char* kWorkerMarker = "PODSCOPE_LAUNCH_WORKER";

// A free TCP port on `host` (bound, read and released).
absl::StatusOr<int> FreePort(bool loopback) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("cannot make a socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(loopback ? INADDR_LOOPBACK : INADDR_ANY);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port <= 0) return absl::InternalError("cannot find a free port");
  return port;
}

struct Placement {
  int rank_offset = 0;
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  std::string token;
  JobTls tls;
};

// Joins the launchers of every node at the rendezvous; node 0's hosts it.
absl::StatusOr<Placement> Rendezvous(
    const LaunchOptions& o, std::unique_ptr<Coordinator>* rdzv_server) {
  Placement p;
  if (o.nnodes == 1) {
    p.world_size = o.nproc_per_node;
    p.master_addr = "127.0.0.1";
    PODSCOPE_ASSIGN_OR_RETURN(auto port, FreePort(true));
    p.master_port = port;
    if (const char* t = std::getenv("PODSCOPE_JOB_TOKEN")) p.token = t;
    return p;
  }
  PODSCOPE_ASSIGN_OR_RETURN(
      auto split, base::SplitHostPort(o.rdzv_endpoint, "--rdzv_endpoint"));
  const auto& [host, port] = split;
  const bool loopback = base::IsLoopbackHost(host);
  if (const char* t = std::getenv("PODSCOPE_JOB_TOKEN")) p.token = t;
  if (!loopback && p.token.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a job across hosts (rendezvous at ", o.rdzv_endpoint,
        ") needs the same secret PODSCOPE_JOB_TOKEN in every node's "
        "environment"));
  }
  p.tls = DiscoverJobTls();
  if (!o.tls_ca_file.empty()) p.tls.ca_file = o.tls_ca_file;
  if (o.insecure) p.tls.insecure = true;
  std::string dial = o.rdzv_endpoint;
  JobTls client_tls = p.tls;
  if (o.node_rank == 0) {
    CoordinatorOptions c;
    c.bind_host = loopback ? "127.0.0.1" : "0.0.0.0";
    c.port = port;
    c.world_size = o.nnodes;
    c.token = p.token;
    c.tls = p.tls;
    // Launchers do not heartbeat: they only meet here once.
    c.dead_after = absl::Hours(24 * 365);
    auto server = StartCoordinator(c);
    if (!server.ok()) {
      return absl::Status(
          server.status().code(),
          absl::StrCat("node 0 cannot host the rendezvous at ", o.rdzv_endpoint,
                       ": ", server.status().message()));
    }
    *rdzv_server = *std::move(server);
    dial = (*rdzv_server)->address();
    client_tls = LocalClientTls(p.tls, host);
  }
  PODSCOPE_ASSIGN_OR_RETURN(
      auto client, CoordinationClient::Create(dial, p.token, client_tls));
  CoordinationClient& c = *client;
  auto reg = c.Register(o.node_rank, o.nnodes, base::HostName(), getpid(),
                        (static_cast<uint64_t>(getpid()) << 16) ^
                            static_cast<uint64_t>(o.node_rank),
                        o.rdzv_timeout);
  if (!reg.ok()) {
    return absl::Status(
        reg.status().code(),
        absl::StrCat("rendezvous of node ", o.node_rank, " at ",
                     o.rdzv_endpoint, ": ", reg.status().message()));
  }
  if (absl::Status s = c.Set(absl::StrCat(kLaunchNprocKeyPrefix, o.node_rank),
                             absl::StrCat(o.nproc_per_node));
      !s.ok()) {
    return s;
  }
  if (o.node_rank == 0) {
    PODSCOPE_ASSIGN_OR_RETURN(auto master, FreePort(loopback));
    if (absl::Status s = c.Set(kLaunchMasterPortKey, absl::StrCat(master));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s =
          c.Barrier(kLaunchReadyBarrier, o.node_rank, o.rdzv_timeout);
      !s.ok()) {
    return s;
  }
  PODSCOPE_ASSIGN_OR_RETURN(auto nprocs, c.GetDirectory(kLaunchNprocKeyPrefix));
  std::map<int, int> per_node;
  for (const auto& [key, value] : nprocs) {
    int node = 0, n = 0;
    if (absl::SimpleAtoi(key.substr(13), &node) &&
        absl::SimpleAtoi(value, &n)) {
      per_node[node] = n;
    }
  }
  for (const auto& [node, n] : per_node) {
    if (node < o.node_rank) p.rank_offset += n;
    p.world_size += n;
  }
  PODSCOPE_ASSIGN_OR_RETURN(
      auto master_port, c.BlockingGet(kLaunchMasterPortKey, o.rdzv_timeout));
  if (!absl::SimpleAtoi(master_port, &p.master_port)) {
    return absl::InternalError("rendezvous: bad master port");
  }
  p.master_addr = host;
  return p;
}

std::vector<std::string> BaseEnvironment(
    const std::vector<std::string>& extra) {
  static const char* const kReplaced[] = {"RANK=",
                                          "WORLD_SIZE=",
                                          "LOCAL_RANK=",
                                          "LOCAL_WORLD_SIZE=",
                                          "GROUP_RANK=",
                                          "GROUP_WORLD_SIZE=",
                                          "MASTER_ADDR=",
                                          "MASTER_PORT=",
                                          "PODSCOPE_LAUNCHER=",
                                          "PODSCOPE_JOB_TOKEN="};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view v(*e);
    bool replaced = false;
    for (const char* r : kReplaced) replaced |= v.rfind(r, 0) == 0;
    for (const std::string& x : extra) {
      const size_t eq = x.find('=');
      replaced |=
          eq != std::string::npos && v.rfind(x.substr(0, eq + 1), 0) == 0;
    }
    if (!replaced) env.emplace_back(v);
  }
  for (const std::string& x : extra) env.push_back(x);
  return env;
}

}  // namespace

absl::StatusOr<LaunchResult> RunLauncher(const LaunchOptions& o) {
  if (o.command.empty()) {
    return absl::InvalidArgumentError("launch: no program to run");
  }
  if (o.nnodes < 1 || o.nproc_per_node < 1) {
    return absl::InvalidArgumentError(
        "launch: --nnodes and --nproc_per_node must be >= 1");
  }
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "launch: --node_rank ", o.node_rank, " is outside 0..", o.nnodes - 1));
  }
  if (o.nnodes > 1 && o.rdzv_endpoint.empty()) {
    return absl::InvalidArgumentError(
        "launch: several nodes need --rdzv_endpoint HOST:PORT (node 0's "
        "address, where its launcher hosts the rendezvous)");
  }
  if (o.max_restarts != 0) {
    return absl::UnimplementedError(
        "launch: --max_restarts other than 0 is not supported; a failed "
        "worker ends the job");
  }
  std::unique_ptr<Coordinator> rdzv_server;
  PODSCOPE_ASSIGN_OR_RETURN(auto placement, Rendezvous(o, &rdzv_server));

  std::vector<internal::WorkerSpec> specs;
  for (int local = 0; local < o.nproc_per_node; ++local) {
    const int rank = placement.rank_offset + local;
    std::vector<std::string> extra = o.extra_env;
    extra.push_back(absl::StrCat("RANK=", rank));
    extra.push_back(absl::StrCat("WORLD_SIZE=", placement.world_size));
    extra.push_back(absl::StrCat("LOCAL_RANK=", local));
    extra.push_back(absl::StrCat("LOCAL_WORLD_SIZE=", o.nproc_per_node));
    extra.push_back(absl::StrCat("GROUP_RANK=", o.node_rank));
    extra.push_back(absl::StrCat("GROUP_WORLD_SIZE=", o.nnodes));
    extra.push_back(absl::StrCat("MASTER_ADDR=", placement.master_addr));
    extra.push_back(absl::StrCat("MASTER_PORT=", placement.master_port));
    extra.push_back("PODSCOPE_LAUNCHER=podscope");
    // Every rank keeps the last 30 s of its trace for the job doctor,
    // unless the launcher's own environment says otherwise.
    if (std::getenv("PODSCOPE_FLIGHT_RECORDER") == nullptr) {
      extra.push_back("PODSCOPE_FLIGHT_RECORDER=30s");
    }
    if (!placement.token.empty()) {
      extra.push_back(absl::StrCat("PODSCOPE_JOB_TOKEN=", placement.token));
    }
    if (!o.tls_ca_file.empty()) {
      extra.push_back(absl::StrCat("PODSCOPE_JOB_TLS_CA=", o.tls_ca_file));
    }
    if (o.insecure) extra.push_back("PODSCOPE_JOB_INSECURE=1");
    specs.push_back({rank, o.command, BaseEnvironment(extra)});
  }
  internal::SuperviseOptions s;
  s.grace_period = o.grace_period;
  s.failure_wait = o.failure_wait;
  s.prefix_output = o.prefix_output;
  s.out = o.out;
  s.err = o.err;
  PODSCOPE_ASSIGN_OR_RETURN(auto supervised, internal::Supervise(specs, s));
  LaunchResult result;
  result.exit_code = supervised.exit_code;
  result.failed_rank = supervised.failed_rank;
  result.message = supervised.message;
  return result;
}

bool IsLaunchedWorker() {
  const char* v = std::getenv(kWorkerMarker);
  return v != nullptr && std::string(v) == "1";
}

absl::Status Launch(const std::function<absl::Status()>& fn, int nprocs,
                    const LaunchOptions& options) {
  if (IsLaunchedWorker()) {
    absl::Status s = fn();
    std::fflush(stdout);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::_Exit(0);
  }
  if (nprocs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Launch: nprocs must be >= 1, got ", nprocs));
  }
  LaunchOptions o = options;
  o.nnodes = 1;
  o.node_rank = 0;
  o.nproc_per_node = nprocs;
  o.command.clear();
  // This program again, with the same arguments.
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(cmdline, arg, '\0')) o.command.push_back(arg);
  if (o.command.empty()) return absl::InternalError("Launch: no command line");
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) o.command[0] = std::string(exe, n);
  o.extra_env.push_back(absl::StrCat(kWorkerMarker, "=1"));
  PODSCOPE_ASSIGN_OR_RETURN(auto result, RunLauncher(o));
  if (result.exit_code != 0) {
    return absl::AbortedError(absl::StrCat("Launch: ", result.message));
  }
  return absl::OkStatus();
}

}  // namespace podscope::job
