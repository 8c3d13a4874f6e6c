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
#include <optional>
#include <string>
#include <string_view>
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

// One published entry (key kProfilerKeyPrefix + rank, value "address
// host pid"); nothing when it does not parse.
std::optional<JobProfiler> ParseJobProfiler(const std::string& key,
                                            const std::string& value);

// Every rank of the job at `coordinator` that published a profiler server,
// sorted by rank.
// `*found_at`, when given, is the coordinator that listed them (the job's
// own, when `coordinator` was the rendezvous of its launch).
absl::StatusOr<std::vector<JobProfiler>> ListJobProfilers(
    const std::string& coordinator, const std::string& token,
    const JobTls& tls = {}, std::string* found_at = nullptr);

// Makes the ranks of the job at `coordinator` the workers of `options`
// (workers, ranks and job, for the manifest). The token is
// options->connect.token, else $PODSCOPE_JOB_TOKEN (which then also
// authenticates the capture: ranks serve their profiler with the job's
// token). The coordinator is dialled with TLS when
// options->connect.tls_ca_file, else $PODSCOPE_JOB_TLS_CA, names a CA.
// Errors are ListJobProfilers'.
// `*found_at` as ListJobProfilers'.
absl::Status ResolveJobWorkers(const std::string& coordinator,
                               profiler::CaptureOptions* options,
                               std::string* found_at = nullptr);

// Has the job's coordinator (`coordinator`: ResolveJobWorkers' found_at)
// record its ranks for a capture that ResolveJobWorkers prepared (sets
// options->relay, and takes options->cancel as it is): one call from here,
// the
// coordinator asks every rank for a worker-side capture starting at one
// instant on the job's clock and answers with every rank's outcome, and
// CaptureWorkers writes the manifest beside the ranks' files. The relay
// fails, with nothing recorded, when the coordinator cannot relay
// (UNIMPLEMENTED: an older one) or a rank has no capture root
// (FAILED_PRECONDITION): the capture may then be made from here. A
// cancelled capture asks the coordinator to stop every rank (files end
// complete).
void RelayThroughCoordinator(const std::string& coordinator,
                             profiler::CaptureOptions* options);

// Whether a relayed capture that failed with `s` (nothing was recorded)
// is to be made from here instead: the coordinator cannot relay
// (UNIMPLEMENTED), or a rank cannot write its own file (FAILED_
// PRECONDITION) and worker-side files were not asked for explicitly.
bool CaptureFromHereInstead(const absl::Status& s, bool worker_writes_asked);

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_PROFILERS_H_
