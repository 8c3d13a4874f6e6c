#include "podscope/job/doctor_report.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "podscope/job/doctor.h"
#include "podscope/job/environment.h"

namespace podscope::job {
namespace {

double Seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

std::string CollectiveText(const RankState& s, int64_t now) {
  std::vector<std::string> parts;
  for (const GroupState& g : s.groups) {
    if (g.last_entered < 0) continue;
    const bool in = g.last_finished < g.last_entered;
    std::string part = absl::StrCat(in ? "in " : "last ", g.last_call.kind,
                                    " #", g.last_entered, " of ", g.group);
    if (in) {
      absl::StrAppend(&part,
                      absl::StrFormat(" for %.1f s",
                                      Seconds(now - g.last_call.entered_ns)));
    }
    parts.push_back(part);
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, "; ");
}

std::string ScopeText(const RankState& s, int64_t now) {
  if (!s.issuer.has_value()) return "-";
  const IssuerState& t = *s.issuer;
  std::string out = ScopePath(t.scopes);
  if (t.innermost_since_ns != 0 && !t.scopes.empty()) {
    absl::StrAppend(&out, absl::StrFormat(" for %.1f s",
                                          Seconds(now - t.innermost_since_ns)));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinationClient>> ConnectToJob(
    const std::string& address, const std::string& token,
    const std::string& tls_ca, const std::string& tls_server_name) {
  JobTls tls = DiscoverJobTls();
  if (!tls_ca.empty()) {
    tls.ca_file = tls_ca;
    tls.server_name = tls_server_name;
  }
  std::string job_token = token;
  if (job_token.empty()) {
    const char* env = std::getenv("PODSCOPE_JOB_TOKEN");
    if (env != nullptr) job_token = env;
  }
  return CoordinationClient::Create(address, job_token, tls);
}

std::vector<DoctorRow> DoctorRows(const JobStateView& view) {
  std::vector<DoctorRow> rows;
  rows.reserve(view.ranks.size());
  for (const RankView& r : view.ranks) {
    DoctorRow row;
    row.rank = r.rank;
    row.registered = r.registered;
    row.host = r.host;
    row.pid = r.pid;
    row.heartbeat =
        r.leaving ? "leaving"
                  : absl::StrFormat("%.1f s ago", r.heartbeat_age_ms / 1e3);
    row.step =
        r.state && r.state->step >= 0 ? absl::StrCat(r.state->step) : "-";
    row.collective = r.state ? CollectiveText(*r.state, view.now_ns) : "-";
    row.scope = r.state ? ScopeText(*r.state, view.now_ns) : "-";
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string DoctorHeadline(const JobStateView& view) {
  return absl::StrFormat("%d ranks, %s", view.ranks.size(),
                         VerdictName(view.verdict_kind));
}

}  // namespace podscope::job
