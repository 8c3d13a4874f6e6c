// The ranks of a job for `podscope capture --job` (capture_job.h).
#include "capture_job.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "podscope/runtime/coordination.h"

namespace podscope::tools {

absl::StatusOr<std::vector<JobWorker>> ResolveJobWorkers(
    const std::string& coordinator, const std::string& token) {
  auto client = runtime::CoordinationClient::Create(coordinator, token);
  if (!client.ok()) return client.status();
  constexpr std::string_view kPrefix = "podscope/profiler/";
  auto entries = (*client)->GetDirectory(kPrefix);
  if (!entries.ok()) return entries.status();
  std::vector<JobWorker> workers;
  for (const auto& [key, value] : *entries) {
    JobWorker w;
    std::vector<std::string> parts = absl::StrSplit(value, ' ');
    if (!absl::SimpleAtoi(key.substr(kPrefix.size()), &w.rank) ||
        parts.empty() || parts[0].empty()) {
      continue;
    }
    w.address = parts[0];
    if (parts.size() > 1) w.host = parts[1];
    if (parts.size() > 2) (void)absl::SimpleAtoi(parts[2], &w.pid);
    workers.push_back(std::move(w));
  }
  if (workers.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "the job at ", coordinator,
        " has no rank with a profiler server (ranks publish one at "
        "Job::Init unless PODSCOPE_JOB_PROFILER=0)"));
  }
  std::sort(
      workers.begin(), workers.end(),
      [](const JobWorker& a, const JobWorker& b) { return a.rank < b.rank; });
  return workers;
}

absl::Status AddRanksToManifest(const std::string& manifest_path,
                                const std::string& coordinator,
                                const std::vector<JobWorker>& workers) {
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", manifest_path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  in.close();
  // The workers appear in the manifest in the order they were asked: each
  // entry starts with its address.
  size_t pos = 0;
  for (const JobWorker& w : workers) {
    const std::string needle =
        absl::StrCat("{\"address\": \"", w.address, "\"");
    const size_t at = text.find(needle, pos);
    if (at == std::string::npos) {
      return absl::InternalError(absl::StrCat("manifest ", manifest_path,
                                              " has no entry for rank ", w.rank,
                                              " (", w.address, ")"));
    }
    const std::string rank = absl::StrCat("\"rank\": ", w.rank, ", ");
    text.insert(at + 1, rank);
    pos = at + needle.size() + rank.size();
  }
  const size_t open = text.find('{');
  if (open == std::string::npos) {
    return absl::InternalError(absl::StrCat(manifest_path, " is not JSON"));
  }
  text.insert(open + 1, absl::StrCat("\n  \"job\": \"", coordinator, "\","));
  const std::string tmp = manifest_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, manifest_path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot write ", manifest_path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace podscope::tools
