// The devices of every process of the job, set by Job::Init and read by
// CreateClient, so that a client made after Init spans the whole job.
#ifndef PODSCOPE_RUNTIME_SRC_DISTRIBUTED_JOB_TOPOLOGY_H_
#define PODSCOPE_RUNTIME_SRC_DISTRIBUTED_JOB_TOPOLOGY_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/runtime/pjrt/client.h"

namespace podscope::runtime::internal {

struct JobDevices {
  int process_index = 0;
  // Devices of each process, by process index.
  std::vector<int> devices_per_process;
};

// Set by Job::Init; nullopt clears it (Job shutdown).
void SetJobDevices(std::optional<JobDevices> devices);
std::optional<JobDevices> GetJobDevices();

// `local` (this process's devices, from LocalTopology) placed among the
// job's: global ids in process order, other processes' devices not
// addressable. FailedPrecondition when `local` has a different number of
// devices than this process announced to the job.
absl::StatusOr<Topology> JobTopology(const Topology& local,
                                     const JobDevices& job);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_DISTRIBUTED_JOB_TOPOLOGY_H_
