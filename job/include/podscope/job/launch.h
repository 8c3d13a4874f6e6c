// Starting the processes of a job: `podscope launch` (torchrun's flags and
// environment) and Launch(fn, nprocs), the seed's `xmp.spawn` /
// `torch_xla.launch`.
//
// Contract:
// - Each worker gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
//   GROUP_RANK, GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
//   PODSCOPE_LAUNCHER=podscope (plus PODSCOPE_JOB_TOKEN when the job is
//   reachable beyond loopback), so Job::Init() needs no arguments.
// - Across hosts the rendezvous (node 0's launcher) and the job's
//   coordinator (rank 0) speak TLS (JobTls) unless `insecure`.
// - Several nodes: every node's launcher joins the rendezvous at
//   rdzv_endpoint (node 0's launcher hosts it there); ranks are global,
//   numbered node by node. Beyond loopback the launchers need the same
//   PODSCOPE_JOB_TOKEN.
// - Output lines of each worker are prefixed "[rank N] ". SIGINT/SIGTERM
//   are forwarded. When a worker fails, the others get failure_wait to
//   end by themselves (a Job reports the dead peer and closes its trace),
//   then SIGTERM, then SIGKILL after grace_period; the result names the
//   rank that caused it and how it ended.
#ifndef PODSCOPE_JOB_LAUNCH_H_
#define PODSCOPE_JOB_LAUNCH_H_

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace podscope::job {

struct LaunchOptions {
  int nnodes = 1;
  int node_rank = 0;
  int nproc_per_node = 1;
  // HOST:PORT of the rendezvous; required with nnodes > 1.
  std::string rdzv_endpoint;
  // Over $PODSCOPE_JOB_TLS_CA and $PODSCOPE_JOB_INSECURE (JobTls), and
  // handed to the workers in those variables.
  std::string tls_ca_file;
  bool insecure = false;
  // Restarts of a failed job; only 0 is supported.
  int max_restarts = 0;
  std::vector<std::string> command;  // the program and its arguments
  // Variables added to (or replacing those of) the launcher's environment.
  std::vector<std::string> extra_env;
  // After a worker fails, how long the others may take to end by
  // themselves (Job's dead-peer detection) before SIGTERM.
  absl::Duration failure_wait = absl::Seconds(10);
  absl::Duration grace_period = absl::Seconds(5);
  absl::Duration rdzv_timeout = absl::Seconds(120);
  bool prefix_output = true;
  std::FILE* out = stdout;
  std::FILE* err = stderr;
};

struct LaunchResult {
  int exit_code = 0;     // what the launcher exits with
  int failed_rank = -1;  // the rank that caused the failure
  std::string
      message;  // e.g. "rank 2 (pid 81) failed: killed by signal SIGKILL"
};

// Runs this node's workers until they end. Errors are bad options, a
// rendezvous that fails, or a program that cannot be started.
absl::StatusOr<LaunchResult> RunLauncher(const LaunchOptions& options);

// Runs fn in `nprocs` processes on this machine: this program is executed
// again nprocs times, and in those processes Launch runs fn and exits the
// process with 0 (fn returned OK) or 1 (its error printed). In the
// launching process it returns when all have ended: OK, or the failure
// naming the rank. Call it from main, before the program does work that
// the workers must not repeat (it runs again in each worker up to here).
absl::Status Launch(const std::function<absl::Status()>& fn, int nprocs,
                    const LaunchOptions& options = {});

// True in a process started by Launch.
bool IsLaunchedWorker();

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_LAUNCH_H_
