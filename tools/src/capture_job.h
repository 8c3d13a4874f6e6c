// `podscope capture --job`: the ranks of a running job, from its
// coordinator's key-value store (every rank publishes its profiler server
// under podscope/profiler/<rank>), and the ranks added to the manifest.
#ifndef PODSCOPE_TOOLS_CAPTURE_JOB_H_
#define PODSCOPE_TOOLS_CAPTURE_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace podscope::tools {

struct JobWorker {
  int rank = 0;
  std::string address;  // the rank's profiler server
  std::string host;
  int64_t pid = 0;
};

// Every rank that published a profiler server, by rank. UNAVAILABLE names
// a coordinator that is not there; NOT_FOUND a job with no servers.
absl::StatusOr<std::vector<JobWorker>> ResolveJobWorkers(
    const std::string& coordinator, const std::string& token);

// Adds "job" and each worker's "rank" to the manifest written by
// CaptureWorkers (workers matched by address).
absl::Status AddRanksToManifest(const std::string& manifest_path,
                                const std::string& coordinator,
                                const std::vector<JobWorker>& workers);

}  // namespace podscope::tools

#endif  // PODSCOPE_TOOLS_CAPTURE_JOB_H_
