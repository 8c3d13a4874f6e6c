// DiscoverJobEnvironment: rank, world size and coordinator from the
// environment of `podscope launch` / torchrun, SLURM or Open MPI.

#include "podscope/job/environment.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::job {
namespace {

constexpr int kDefaultMasterPort = 29500;

class Env {
 public:
  explicit Env(const EnvLookup& lookup) : lookup_(lookup) {}

  std::optional<std::string> Get(const char* name) const {
    std::optional<std::string> v = lookup_(name);
    if (v && v->empty()) return std::nullopt;
    return v;
  }
  bool Has(const char* name) const { return Get(name).has_value(); }

  // The variable as an integer >= `min`, `fallback` when unset.
  absl::StatusOr<int> Int(const char* name, int fallback, int min = 0) const {
    std::optional<std::string> v = Get(name);
    if (!v) return fallback;
    // SLURM writes counts per node as "2(x3)"; the first number counts.
    std::string text = *v;
    if (const size_t paren = text.find('('); paren != std::string::npos) {
      text.resize(paren);
    }
    int value = 0;
    if (!absl::SimpleAtoi(text, &value) || value < min) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, " must be an integer >= ", min, ", got '", *v, "'"));
    }
    return value;
  }

 private:
  const EnvLookup& lookup_;
};

#define PODSCOPE_ENV_INT(lhs, env, name, fallback, min) \
  do {                                                  \
    auto _v = (env).Int(name, fallback, min);           \
    if (!_v.ok()) return _v.status();                   \
    lhs = *_v;                                          \
  } while (0)

// MASTER_ADDR:MASTER_PORT, with defaults for the address (nullopt: none).
absl::StatusOr<std::string> Master(const Env& env,
                                   std::optional<std::string> default_addr) {
  std::optional<std::string> addr = env.Get("MASTER_ADDR");
  if (!addr) addr = std::move(default_addr);
  if (!addr) return std::string();
  int port = 0;
  PODSCOPE_ENV_INT(port, env, "MASTER_PORT", kDefaultMasterPort, 1);
  if (port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_PORT must be 1..65535, got ", port));
  }
  std::string host = *addr;
  if (host.find(':') != std::string::npos && host.front() != '[') {
    host = "[" + host + "]";
  }
  return absl::StrCat(host, ":", port);
}

absl::Status Check(const JobEnvironment& e, const char* rank_var,
                   const char* size_var) {
  if (e.world_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(size_var, " must be >= 1, got ", e.world_size));
  }
  if (e.rank < 0 || e.rank >= e.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat(rank_var, "=", e.rank, " is outside 0..", e.world_size - 1,
                     " (", size_var, "=", e.world_size, ")"));
  }
  if (e.local_world_size < 1 || e.local_rank < 0 ||
      e.local_rank >= e.local_world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local rank ", e.local_rank, " is outside 0..", e.local_world_size - 1,
        " (", e.launcher, " environment)"));
  }
  if (e.world_size > 1 && e.coordinator_address.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a job of ", e.world_size, " processes (", e.launcher,
                     ") needs the coordinator's address: set MASTER_ADDR (and "
                     "MASTER_PORT, default ",
                     kDefaultMasterPort, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmNodeList(
    std::string_view nodelist_view) {
  // absl::string_view, which abseil's string functions take.
  const absl::string_view nodelist(nodelist_view.data(), nodelist_view.size());
  std::vector<std::string> out;
  // Split at top-level commas.
  std::vector<absl::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= nodelist.size(); ++i) {
    const char c = i < nodelist.size() ? nodelist[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("SLURM node list '", nodelist, "': ']' without '['"));
    }
    if (c == ',' && depth == 0) {
      if (i > start) items.push_back(nodelist.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("SLURM node list '", nodelist, "': unclosed '['"));
  }
  for (absl::string_view item : items) {
    const size_t open = item.find('[');
    if (open == absl::string_view::npos) {
      out.emplace_back(item);
      continue;
    }
    const size_t close = item.find(']', open);
    const std::string prefix(item.substr(0, open));
    const absl::string_view ranges = item.substr(open + 1, close - open - 1);
    // The rest may hold more bracket groups: expand it recursively.
    std::vector<std::string> tails{""};
    if (close + 1 < item.size()) {
      const absl::string_view rest_text = item.substr(close + 1);
      PODSCOPE_ASSIGN_OR_RETURN(
          auto rest, ExpandSlurmNodeList(
                         std::string_view(rest_text.data(), rest_text.size())));
      tails = std::move(rest);
    }
    size_t pos = 0;
    while (pos <= ranges.size()) {
      size_t comma = ranges.find(',', pos);
      if (comma == absl::string_view::npos) comma = ranges.size();
      const absl::string_view range = ranges.substr(pos, comma - pos);
      pos = comma + 1;
      const size_t dash = range.find('-');
      const absl::string_view lo_text = range.substr(0, dash);
      const absl::string_view hi_text =
          dash == absl::string_view::npos ? lo_text : range.substr(dash + 1);
      int64_t lo = 0, hi = 0;
      if (range.empty() || !absl::SimpleAtoi(lo_text, &lo) ||
          !absl::SimpleAtoi(hi_text, &hi) || lo < 0 || hi < lo ||
          hi - lo > 100000) {
        return absl::InvalidArgumentError(absl::StrCat(
            "SLURM node list '", nodelist, "': bad range '", range, "'"));
      }
      for (int64_t n = lo; n <= hi; ++n) {
        std::string number = absl::StrCat(n);
        // Zero padding follows the width of the range's first number.
        if (number.size() < lo_text.size()) {
          number.insert(0, lo_text.size() - number.size(), '0');
        }
        for (const std::string& tail : tails) {
          out.push_back(absl::StrCat(prefix, number, tail));
        }
      }
      if (comma == ranges.size()) break;
    }
  }
  return out;
}

absl::StatusOr<JobEnvironment> DiscoverJobEnvironment(const EnvLookup& lookup) {
  Env env(lookup);
  JobEnvironment e;
  if (auto token = env.Get("PODSCOPE_JOB_TOKEN")) e.job_token = *token;
  e.tls = DiscoverJobTls(lookup);

  if (env.Has("RANK") || env.Has("WORLD_SIZE")) {
    // podscope launch and torchrun (env:// initialization).
    const std::optional<std::string> who = env.Get("PODSCOPE_LAUNCHER");
    e.launcher = who.value_or("torchrun");
    if (!env.Has("RANK") || !env.Has("WORLD_SIZE")) {
      return absl::InvalidArgumentError(
          "RANK and WORLD_SIZE must be set together");
    }
    PODSCOPE_ENV_INT(e.rank, env, "RANK", 0, 0);
    PODSCOPE_ENV_INT(e.world_size, env, "WORLD_SIZE", 1, 1);
    PODSCOPE_ENV_INT(e.local_rank, env, "LOCAL_RANK", e.rank, 0);
    PODSCOPE_ENV_INT(e.local_world_size, env, "LOCAL_WORLD_SIZE", e.world_size,
                     1);
    PODSCOPE_ENV_INT(e.group_rank, env, "GROUP_RANK", 0, 0);
    PODSCOPE_ASSIGN_OR_RETURN(
        auto master,
        Master(env, e.world_size == 1 ? std::optional<std::string>("127.0.0.1")
                                      : std::nullopt));
    e.coordinator_address = master;
    if (absl::Status s = Check(e, "RANK", "WORLD_SIZE"); !s.ok()) return s;
    return e;
  }

  if (env.Has("SLURM_PROCID") && env.Has("SLURM_NTASKS")) {
    e.launcher = "slurm";
    PODSCOPE_ENV_INT(e.rank, env, "SLURM_PROCID", 0, 0);
    PODSCOPE_ENV_INT(e.world_size, env, "SLURM_NTASKS", 1, 1);
    PODSCOPE_ENV_INT(e.local_rank, env, "SLURM_LOCALID", 0, 0);
    PODSCOPE_ENV_INT(e.group_rank, env, "SLURM_NODEID", 0, 0);
    int per_node = 0;
    PODSCOPE_ENV_INT(per_node, env, "SLURM_NTASKS_PER_NODE", 0, 0);
    if (per_node == 0) {
      PODSCOPE_ENV_INT(per_node, env, "SLURM_TASKS_PER_NODE", 0, 0);
    }
    e.local_world_size = per_node > 0 ? per_node : e.local_rank + 1;
    std::optional<std::string> first_host;
    std::optional<std::string> list = env.Get("SLURM_JOB_NODELIST");
    if (!list) list = env.Get("SLURM_NODELIST");
    if (list) {
      PODSCOPE_ASSIGN_OR_RETURN(auto hosts, ExpandSlurmNodeList(*list));
      if (!hosts.empty()) first_host = hosts.front();
    }
    PODSCOPE_ASSIGN_OR_RETURN(auto master, Master(env, first_host));
    e.coordinator_address = master;
    if (absl::Status s = Check(e, "SLURM_PROCID", "SLURM_NTASKS"); !s.ok()) {
      return s;
    }
    return e;
  }

  if (env.Has("OMPI_COMM_WORLD_RANK") && env.Has("OMPI_COMM_WORLD_SIZE")) {
    e.launcher = "openmpi";
    PODSCOPE_ENV_INT(e.rank, env, "OMPI_COMM_WORLD_RANK", 0, 0);
    PODSCOPE_ENV_INT(e.world_size, env, "OMPI_COMM_WORLD_SIZE", 1, 1);
    PODSCOPE_ENV_INT(e.local_rank, env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
    PODSCOPE_ENV_INT(e.local_world_size, env, "OMPI_COMM_WORLD_LOCAL_SIZE",
                     e.local_rank + 1, 1);
    PODSCOPE_ENV_INT(e.group_rank, env, "OMPI_COMM_WORLD_NODE_RANK", 0, 0);
    // Every rank on this machine: rank 0 is here too.
    const bool one_node = e.local_world_size == e.world_size;
    PODSCOPE_ASSIGN_OR_RETURN(
        auto master,
        Master(env, one_node ? std::optional<std::string>("127.0.0.1")
                             : std::nullopt));
    e.coordinator_address = master;
    if (absl::Status s =
            Check(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
        !s.ok()) {
      return s;
    }
    return e;
  }

  // A single process.
  e.launcher = "none";
  PODSCOPE_ASSIGN_OR_RETURN(auto master, Master(env, std::nullopt));
  e.coordinator_address = master;
  return e;
}

namespace {

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace

absl::StatusOr<JobEnvironment> DiscoverJobEnvironment() {
  return DiscoverJobEnvironment(ProcessEnv);
}

JobTls DiscoverJobTls(const EnvLookup& env) {
  JobTls tls;
  tls.cert_file = env("PODSCOPE_JOB_TLS_CERT").value_or("");
  tls.key_file = env("PODSCOPE_JOB_TLS_KEY").value_or("");
  tls.ca_file = env("PODSCOPE_JOB_TLS_CA").value_or("");
  tls.server_name = env("PODSCOPE_JOB_TLS_NAME").value_or("");
  const std::string insecure = env("PODSCOPE_JOB_INSECURE").value_or("");
  tls.insecure = !insecure.empty() && insecure != "0";
  return tls;
}

JobTls DiscoverJobTls() { return DiscoverJobTls(ProcessEnv); }

JobTls LocalClientTls(const JobTls& tls, const std::string& public_host) {
  JobTls local = tls;
  if (local.ca_file.empty()) local.ca_file = local.cert_file;
  if (local.server_name.empty() && !local.ca_file.empty()) {
    local.server_name = public_host;
  }
  return local;
}

}  // namespace podscope::job
