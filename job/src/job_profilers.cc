// The profiler servers a job's ranks published (profilers.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "podscope/base/net.h"
#include "podscope/base/status_macros.h"
#include "podscope/job/coordination.h"
#include "podscope/job/keys.h"
#include "podscope/job/profilers.h"

namespace podscope::job {

std::optional<JobProfiler> ParseJobProfiler(const std::string& key,
                                            const std::string& value) {
  const std::string prefix = kProfilerKeyPrefix;
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  JobProfiler p;
  std::vector<std::string> parts =
      absl::StrSplit(value, ' ', absl::SkipEmpty());
  if (!absl::SimpleAtoi(key.substr(prefix.size()), &p.rank) || p.rank < 0 ||
      parts.empty()) {
    return std::nullopt;
  }
  p.address = parts[0];
  if (parts.size() > 1) p.host = parts[1];
  if (parts.size() > 2) (void)absl::SimpleAtoi(parts[2], &p.pid);
  return p;
}

absl::StatusOr<std::vector<JobProfiler>> ListJobProfilers(
    const std::string& coordinator, const std::string& token, const JobTls& tls,
    std::string* found_at) {
  PODSCOPE_ASSIGN_OR_RETURN(
      auto client, CoordinationClient::Create(coordinator, token, tls));
  // A connection that fails once (a handshake cut short on a busy host) is
  // tried again for a few seconds before the coordinator is declared
  // unreachable; any other answer is final.
  auto entries = client->GetDirectory(kProfilerKeyPrefix);
  for (int retry = 0; retry < 20 && absl::IsUnavailable(entries.status());
       ++retry) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    entries = client->GetDirectory(kProfilerKeyPrefix);
  }
  if (!entries.ok()) return entries.status();
  if (entries->empty()) {
    // The rendezvous of `podscope launch --rdzv_endpoint` (node 0's
    // launcher) rather than the job's coordinator: it knows the job's
    // MASTER_PORT, on the same host.
    if (auto master = client->Get(kLaunchMasterPortKey); master.ok()) {
      auto host = base::SplitHostPort(coordinator, "coordinator address");
      int port = 0;
      if (host.ok() && absl::SimpleAtoi(*master, &port) &&
          port != host->second) {
        return ListJobProfilers(base::JoinHostPort(host->first, port), token,
                                tls, found_at);
      }
    }
  }
  if (found_at != nullptr) *found_at = coordinator;
  std::vector<JobProfiler> ranks;
  for (const auto& [key, value] : *entries) {
    if (auto p = ParseJobProfiler(key, value)) ranks.push_back(*std::move(p));
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
                               profiler::CaptureOptions* options,
                               std::string* found_at) {
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
      auto ranks,
      ListJobProfilers(coordinator, options->connect.token, tls, found_at));
  options->job = coordinator;
  options->workers.clear();
  options->ranks.clear();
  for (const JobProfiler& r : ranks) {
    options->workers.push_back(r.address);
    options->ranks.push_back(r.rank);
  }
  return absl::OkStatus();
}

bool CaptureFromHereInstead(const absl::Status& s, bool worker_writes_asked) {
  return s.code() == absl::StatusCode::kUnimplemented ||
         (s.code() == absl::StatusCode::kFailedPrecondition &&
          !worker_writes_asked);
}

void RelayThroughCoordinator(const std::string& coordinator,
                             profiler::CaptureOptions* options) {
  JobTls tls = DiscoverJobTls();
  if (!options->connect.tls_ca_file.empty()) {
    tls.ca_file = options->connect.tls_ca_file;
    tls.server_name = options->connect.tls_server_name;
  }
  const std::string token = options->connect.token;
  const profiler::CaptureOptions request = *options;
  const std::atomic<bool>* const stop = options->cancel;
  options->worker_writes = true;
  options->relay =
      [coordinator, token, tls, request, stop](
          std::vector<profiler::WorkerResult>* results,
          const std::function<void(const profiler::CaptureProgress&)>& report)
      -> absl::Status {
    PODSCOPE_ASSIGN_OR_RETURN(
        auto client, CoordinationClient::Create(coordinator, token, tls));
    std::vector<profiler::WorkerResult> ranks;
    PODSCOPE_RETURN_IF_ERROR(
        client->CaptureRanks(request, report, stop, &ranks));
    // By rank: the ranks this side listed, in its order; a rank the
    // coordinator did not record says so; one it recorded that this side
    // did not list (it published later) is added; a rank answered twice
    // counts once. Linear in the answer.
    absl::flat_hash_map<int, size_t> answered;
    for (size_t k = 0; k < ranks.size(); ++k)
      answered.emplace(ranks[k].rank, k);
    absl::flat_hash_map<int, bool> listed;
    for (profiler::WorkerResult& w : *results) {
      listed.emplace(w.rank, true);
      auto it = answered.find(w.rank);
      if (it == answered.end()) {
        w.ok = false;
        w.error = absl::StrCat(w.address, ": the coordinator recorded no rank ",
                               w.rank);
        continue;
      }
      w = std::move(ranks[it->second]);
      answered.erase(it);
    }
    for (size_t k = 0; k < ranks.size(); ++k) {
      auto it = answered.find(ranks[k].rank);
      if (it == answered.end() || it->second != k) continue;
      if (listed.contains(ranks[k].rank)) continue;
      results->push_back(std::move(ranks[k]));
    }
    return absl::OkStatus();
  };
}

}  // namespace podscope::job
