// Who a process is in a multi-process job, from what its launcher put in
// its environment. No device and no connection: `podscope launch`, the
// capture client and Job::Init (runtime/distributed.h) all read it.
//
// Contract:
// - DiscoverJobEnvironment() reads the environment that `podscope launch`,
//   torchrun, SLURM or Open MPI give a process; with none of them it
//   describes a single-process job (rank 0 of 1, launcher "none").
// - Every malformed or inconsistent variable is InvalidArgument naming it.
#ifndef PODSCOPE_JOB_ENVIRONMENT_H_
#define PODSCOPE_JOB_ENVIRONMENT_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace podscope::job {

// TLS of a job's coordinator and its clients. Beyond loopback a
// coordinator speaks TLS unless `insecure` (trusted networks only): the
// job token would otherwise cross the network in clear.
struct JobTls {
  std::string cert_file;    // $PODSCOPE_JOB_TLS_CERT: the coordinator's
  std::string key_file;     // $PODSCOPE_JOB_TLS_KEY
  std::string ca_file;      // $PODSCOPE_JOB_TLS_CA: what clients trust
  std::string server_name;  // $PODSCOPE_JOB_TLS_NAME: the name they check
  bool insecure = false;    // $PODSCOPE_JOB_INSECURE=1
};

struct JobEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int group_rank = 0;  // the node's rank
  // "MASTER_ADDR:MASTER_PORT"; empty for a single process without one.
  std::string coordinator_address;
  // "podscope", "torchrun", "slurm", "openmpi" or "none".
  std::string launcher = "none";
  // Required by a coordinator reachable from other hosts
  // ($PODSCOPE_JOB_TOKEN).
  std::string job_token;
  JobTls tls;
};

// The job this process belongs to, from the environment:
//   podscope launch / torchrun: RANK, WORLD_SIZE, LOCAL_RANK,
//     LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT
//   SLURM: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID,
//     SLURM_NTASKS_PER_NODE; coordinator the first host of
//     SLURM_JOB_NODELIST (MASTER_ADDR / MASTER_PORT override; port 29500)
//   Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//     OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE,
//     OMPI_COMM_WORLD_NODE_RANK; coordinator MASTER_ADDR:MASTER_PORT
//   PODSCOPE_JOB_TOKEN: the job token; PODSCOPE_JOB_TLS_*,
//     PODSCOPE_JOB_INSECURE: its coordinator's TLS (JobTls).
// InvalidArgument names the variable that is malformed or inconsistent.
absl::StatusOr<JobEnvironment> DiscoverJobEnvironment();

// The same from an explicit lookup (tests; embedding).
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
absl::StatusOr<JobEnvironment> DiscoverJobEnvironment(const EnvLookup& env);

// JobTls from the same variables (launchers, `capture --job`).
JobTls DiscoverJobTls(const EnvLookup& env);
JobTls DiscoverJobTls();

// What a client beside the coordinator (rank 0, node 0's launcher, which
// dial it through loopback) uses: the coordinator's own certificate as
// the CA when none is given, and `public_host` as the name checked unless
// one is given.
JobTls LocalClientTls(const JobTls& tls, const std::string& public_host);

// SLURM host lists: "node[01-04,07],gpu3" -> node01 node02 node03 node04
// node07 gpu3. InvalidArgument for unbalanced brackets or bad ranges.
absl::StatusOr<std::vector<std::string>> ExpandSlurmNodeList(
    std::string_view nodelist);

// The exit status of a process ended because a peer of its job failed
// (runtime's InitOptions::exit_on_peer_failure); launchers tell it from a
// failure of the process itself.
inline constexpr int kPeerFailureExitCode = 75;

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_ENVIRONMENT_H_
