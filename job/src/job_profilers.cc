// The profiler servers a job's ranks published (profilers.h).
#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"
#include "podscope/job/profilers.h"

namespace podscope::job {

absl::StatusOr<std::vector<JobProfiler>> ListJobProfilers(
    const std::string& coordinator, const std::string& token,
    const JobTls& tls) {
  PODSCOPE_ASSIGN_OR_RETURN(
      auto client, CoordinationClient::Create(coordinator, token, tls));
  PODSCOPE_ASSIGN_OR_RETURN(auto entries,
                            client->GetDirectory(kProfilerKeyPrefix));
  if (entries.empty()) {
    // The rendezvous of `podscope launch --rdzv_endpoint` (node 0's
    // launcher) rather than the job's coordinator: it knows the job's
    // MASTER_PORT, on the same host.
    if (auto master = client->Get(kLaunchMasterPortKey); master.ok()) {
      auto host = base::SplitHostPort(coordinator, "coordinator address");
      int port = 0;
      if (host.ok() && absl::SimpleAtoi(*master, &port) &&
          port != host->second) {
        return ListJobProfilers(base::JoinHostPort(host->first, port), token,
                                tls);
      }
    }
  }
  std::vector<JobProfiler> ranks;
  for (const auto& [key, value] : entries) {
    JobProfiler p;
    std::vector<std::string> parts =
        absl::StrSplit(value, ' ', absl::SkipEmpty());
    if (!absl::SimpleAtoi(
            key.substr(std::string_view(kProfilerKeyPrefix).size()), &p.rank) ||
        p.rank < 0 || parts.empty()) {
      continue;
    }
    p.address = parts[0];
    if (parts.size() > 1) p.host = parts[1];
    if (parts.size() > 2) (void)absl::SimpleAtoi(parts[2], &p.pid);
    ranks.push_back(std::move(p));
  }
  if (ranks.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "the job at ", coordinator,
        " has no rank with a profiler server (ranks publish one at "
        "Job::Init unless PODSCOPE_JOB_PROFILER=0)"));
  }
  std::sort(ranks.begin(), ranks.end(),
            [](const JobProfiler& a, const JobProfiler& b) {
              return a.rank < b.rank;
            });
  return ranks;
}

absl::Status ResolveJobWorkers(const std::string& coordinator,
                               profiler::CaptureOptions* options) {
  if (options->connect.token.empty()) {
    if (const char* t = std::getenv("PODSCOPE_JOB_TOKEN")) {
      options->connect.token = t;
    }
  }
  JobTls tls = DiscoverJobTls();
  if (!options->connect.tls_ca_file.empty()) {
    tls.ca_file = options->connect.tls_ca_file;
    tls.server_name = options->connect.tls_server_name;
  }
  PODSCOPE_ASSIGN_OR_RETURN(
      auto ranks, ListJobProfilers(coordinator, options->connect.token, tls));
  options->job = coordinator;
  options->workers.clear();
  options->ranks.clear();
  for (const JobProfiler& r : ranks) {
    options->workers.push_back(r.address);
    options->ranks.push_back(r.rank);
  }
  return absl::OkStatus();
}

}  // namespace podscope::job
