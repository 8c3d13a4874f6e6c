#include "src/key_rules.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "podscope/job/keys.h"

namespace podscope::job::internal {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The rank a per-rank key "<prefix><kind>/<rank>" names, or -1.
int RankOfKey(std::string_view key, std::string_view prefix) {
  std::string_view rest = key.substr(prefix.size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) return -1;
  std::string_view number = rest.substr(slash + 1);
  if (number.empty() || number.size() > 9) return -1;
  for (char c : number) {
    if (c < '0' || c > '9') return -1;
  }
  if (number.size() > 1 && number[0] == '0') return -1;
  int rank = -1;
  if (!absl::SimpleAtoi(std::string(number), &rank)) return -1;
  return rank;
}

absl::Status Denied(int rank, std::string_view key, std::string_view rule) {
  return absl::PermissionDeniedError(
      absl::StrCat("rank ", rank, " may not write key '", std::string(key),
                   "': ", std::string(rule)));
}

}  // namespace

absl::Status CheckKeyWriter(int rank, std::string_view key) {
  const std::string_view podscope = kPodscopeKeyPrefix;
  const std::string_view launch = kLaunchKeyPrefix;
  if (StartsWith(key, podscope)) {
    if (key == kClockProbeKey) {
      return rank == 0 ? absl::OkStatus() : Denied(rank, key, "it is rank 0's");
    }
    if (RankOfKey(key, podscope) == rank) return absl::OkStatus();
    return Denied(rank, key,
                  absl::StrCat("keys under podscope/ are reserved; a rank "
                               "writes only podscope/<kind>/",
                               rank));
  }
  if (StartsWith(key, launch)) {
    if (key == kLaunchMasterPortKey) {
      return rank == 0 ? absl::OkStatus() : Denied(rank, key, "it is node 0's");
    }
    if (StartsWith(key, kLaunchNprocKeyPrefix) &&
        RankOfKey(key, launch) == rank) {
      return absl::OkStatus();
    }
    return Denied(rank, key,
                  absl::StrCat("keys under launch/ are the launchers'; node ",
                               rank, " writes only launch/nproc/", rank));
  }
  return absl::OkStatus();
}

}  // namespace podscope::job::internal
