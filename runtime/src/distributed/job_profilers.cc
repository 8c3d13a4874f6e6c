// The profiler servers a job's ranks published (coordination.h).
#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "podscope/runtime/coordination.h"

namespace podscope::runtime {

absl::StatusOr<std::vector<JobProfiler>> ListJobProfilers(
    const std::string& coordinator, const std::string& token) {
  auto client = CoordinationClient::Create(coordinator, token);
  if (!client.ok()) return client.status();
  auto entries = (*client)->GetDirectory(kJobProfilerKeyPrefix);
  if (!entries.ok()) return entries.status();
  if (entries->empty()) {
    // The rendezvous of `podscope launch --rdzv_endpoint` (node 0's
    // launcher) rather than the job's coordinator: it knows the job's
    // MASTER_PORT, on the same host.
    if (auto master = (*client)->Get("launch/master_port"); master.ok()) {
      auto host = SplitHostPort(coordinator, "coordinator address");
      int port = 0;
      if (host.ok() && absl::SimpleAtoi(*master, &port) &&
          port != host->second) {
        const std::string job = host->first.find(':') != std::string::npos
                                    ? absl::StrCat("[", host->first, "]:", port)
                                    : absl::StrCat(host->first, ":", port);
        return ListJobProfilers(job, token);
      }
    }
  }
  std::vector<JobProfiler> ranks;
  for (const auto& [key, value] : *entries) {
    JobProfiler p;
    std::vector<std::string> parts =
        absl::StrSplit(value, ' ', absl::SkipEmpty());
    if (!absl::SimpleAtoi(key.substr(kJobProfilerKeyPrefix.size()), &p.rank) ||
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

}  // namespace podscope::runtime
