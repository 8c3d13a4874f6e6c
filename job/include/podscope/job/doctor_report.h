// The job doctor's live view, as `podscope doctor` and the viewer's Pod
// panel show it (docs/doctor.md): a client of the job's coordinator, and
// one row of text per rank from its JobState answer. Both callers share
// this so that they say the same thing about the same job.
#ifndef PODSCOPE_JOB_DOCTOR_REPORT_H_
#define PODSCOPE_JOB_DOCTOR_REPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/job/coordination.h"

namespace podscope::job {

// A client of the coordinator at `address` (rank 0's MASTER_ADDR:
// MASTER_PORT): `token` (empty: $PODSCOPE_JOB_TOKEN), TLS from `tls_ca`
// and `tls_server_name` when given, else from the environment
// (DiscoverJobTls). Fails naming a bad address or TLS file.
absl::StatusOr<std::unique_ptr<CoordinationClient>> ConnectToJob(
    const std::string& address, const std::string& token = "",
    const std::string& tls_ca = "", const std::string& tls_server_name = "");

// One rank as the doctor shows it; "-" where it says nothing.
struct DoctorRow {
  int rank = 0;
  bool registered = false;
  std::string host;
  int64_t pid = 0;
  std::string step;       // "12"
  std::string heartbeat;  // "0.2 s ago", "leaving"
  // "in all_reduce #3 of world for 1.7 s" / "last all_reduce #2 of world",
  // per group, "; " between.
  std::string collective;
  // "train_step > data_loading > read_batch for 1.7 s"
  std::string scope;
};

std::vector<DoctorRow> DoctorRows(const JobStateView& view);

// "3 ranks, stalled"
std::string DoctorHeadline(const JobStateView& view);

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_DOCTOR_REPORT_H_
