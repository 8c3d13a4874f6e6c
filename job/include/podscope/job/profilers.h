// Finding a job's profiler servers: what `podscope capture --job` and the
// viewer's File › Capture… dial.
//
// Contract:
// - Every rank that Job::Init started a profiler server in published it
//   under kProfilerKeyPrefix + rank (keys.h) as "address host pid".
// - `coordinator` is the job's MASTER_ADDR:MASTER_PORT, or the
//   --rdzv_endpoint of a `podscope launch` across hosts (its rendezvous
//   names the job's port, which is then asked).
// - UNAVAILABLE names a coordinator that is not there, UNAUTHENTICATED a
//   wrong token, NOT_FOUND a job whose ranks published none. Entries that
//   do not parse are skipped.
#ifndef PODSCOPE_JOB_PROFILERS_H_
#define PODSCOPE_JOB_PROFILERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "podscope/job/environment.h"
#include "podscope/profiler/capture.h"

namespace podscope::job {

struct JobProfiler {
  int rank = 0;
  std::string address;  // "host:port" to dial
  std::string host;
  int64_t pid = 0;
};

// Every rank of the job at `coordinator` that published a profiler server,
// sorted by rank.
absl::StatusOr<std::vector<JobProfiler>> ListJobProfilers(
    const std::string& coordinator, const std::string& token,
    const JobTls& tls = {});

// Makes the ranks of the job at `coordinator` the workers of `options`
// (workers, ranks and job, for the manifest). The token is
// options->connect.token, else $PODSCOPE_JOB_TOKEN (which then also
// authenticates the capture: ranks serve their profiler with the job's
// token). The coordinator is dialled with TLS when
// options->connect.tls_ca_file, else $PODSCOPE_JOB_TLS_CA, names a CA.
// Errors are ListJobProfilers'.
absl::Status ResolveJobWorkers(const std::string& coordinator,
                               profiler::CaptureOptions* options);

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_PROFILERS_H_
