// Runs a job's worker processes on this machine and watches them: output
// lines prefixed with the rank, SIGINT/SIGTERM forwarded, the first failure
// stops the others (after they had time to notice it themselves: SIGTERM,
// then SIGKILL after a grace period).
#ifndef PODSCOPE_RUNTIME_SRC_DISTRIBUTED_SUPERVISOR_H_
#define PODSCOPE_RUNTIME_SRC_DISTRIBUTED_SUPERVISOR_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace podscope::job::internal {

struct WorkerSpec {
  int rank = 0;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // the whole environment, "NAME=value"
};

struct SuperviseOptions {
  // After a worker fails, how long the others may take to end by
  // themselves (a Job's dead-peer detection reports it and closes traces)
  // before they are sent SIGTERM; shortened to 2 s when the failure was
  // itself a peer reporting a dead one, and skipped when every remaining
  // worker is stopped.
  absl::Duration failure_wait = absl::Seconds(10);
  absl::Duration grace_period = absl::Seconds(5);
  bool prefix_output = true;
  std::FILE* out = stdout;  // workers' stdout lines
  std::FILE* err = stderr;  // workers' stderr lines and the messages
  std::string name = "podscope launch";  // prefix of the messages
};

struct SuperviseResult {
  int exit_code = 0;     // 0, the first failure's code, or 128 + signal
  int failed_rank = -1;  // the rank whose failure is the cause, or -1
  std::string message;   // empty on success
};

// Fails only when a worker cannot be started (the others are stopped).
absl::StatusOr<SuperviseResult> Supervise(
    const std::vector<WorkerSpec>& workers, const SuperviseOptions& options);

// "SIGKILL" for 9, else "signal N".
std::string SignalName(int signo);

}  // namespace podscope::job::internal

#endif  // PODSCOPE_RUNTIME_SRC_DISTRIBUTED_SUPERVISOR_H_
