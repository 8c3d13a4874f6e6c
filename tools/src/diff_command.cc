// `podscope diff BASELINE CANDIDATE`: what changed between two sessions
// (viewer/core session_diff.h), as text or JSON, with --fail_if gates for
// CI.
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "diff_gate.h"
#include "diff_print.h"
#include "flags.h"
#include "import_path.h"
#include "podscope/viewer/session_diff.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::tools {
namespace {

constexpr int kExitGateFailed = 1;

constexpr std::string_view kHelp =
    R"(Usage: podscope diff [flags] BASELINE CANDIDATE

Compares two sessions of the same job: BASELINE and CANDIDATE are each a
trace file, a session folder, a capture folder (its newest session), or
other profilers' traces (imported first). Ranks are matched by rank and
steps by number (else by order); the first --skip_steps steps of each are
left out. Prints:
  - the job's step time (per step, the slowest rank's) and each rank's:
    median and p90 in both, the change, and a Mann-Whitney U test over the
    steps (p-value and rank-biserial effect size). A change is called
    SLOWER or FASTER only when p < --alpha and it is at least
    --min_change_pct of the baseline; anything else is noise;
  - the change by category (compute, collective transfer, collective
    wait, data loading, host, idle), by device op, by host scope and by
    collective (self time per rank per step, with the rank that moved
    most), and the ops that appeared or vanished;
  - recompiles: misses and late misses in both, and the candidate's misses
    of a signature the baseline never compiled.
docs/analysis.md defines every number.

Flags:
  --fail_if COND       Exit 1 when COND holds; repeatable. COND is
                       FIGURE OP CHANGE [and p<X], comparing the figure's
                       change from the baseline: in % ('step_ms.median >
                       +5%'), in time ('op:conv2d > +2ms', units ns us ms
                       s), or, for recompiles.misses, recompiles.late and
                       recompiles.new, in counts ('recompiles.new > 0').
                       'p<0.01' also requires the change's p-value below
                       0.01. FIGURE is any figure --json lists by name:
                       step_ms.median, step_ms.p90, rankN.step_ms.median,
                       category:collective_wait, op:NAME, scope:NAME,
                       collective:NAME, ...
  --json               Print one JSON document
  --top N              Changes listed per kind (default 10, 0: all)
  --skip_steps N       Steps left out at the start of each (default 1)
  --alpha_permille N   Significance level in thousandths (default 10: 0.01)
  --min_change_pct N   Smallest change called significant (default 1)
  -h, --help           Show this help

Exit codes: 0 success (and no --fail_if held), 1 a --fail_if condition
held, 2 usage error (including a --fail_if that names no figure), 3 a
session not found or nothing readable in it, 4 internal or I/O error.
)";

absl::StatusOr<std::unique_ptr<viewer::TraceStore>> Load(
    const std::string& path, const CommandIo& io) {
  auto input = ResolveInput(path, "diff", io);
  if (!input.ok()) return input.status();
  auto store = viewer::TraceStore::Open(*input);
  if (!store.ok()) return store.status();
  for (const viewer::LoadProblem& p : (*store)->problems()) {
    std::fprintf(io.err, "podscope diff: warning: %s: %s%s\n", p.path.c_str(),
                 p.message.c_str(),
                 p.loaded ? " (what could be read is compared)" : "");
  }
  return store;
}

int RunDiff(std::span<const std::string> args, const CommandIo& io) {
  bool json = false;
  int64_t top = 10, skip = 1, alpha_permille = 10, min_change_pct = 1;
  std::vector<std::string> conditions;
  FlagParser flags;
  flags.AddBool("json", &json);
  flags.AddInt("top", &top, 0, 1000000);
  flags.AddInt("skip_steps", &skip, 0, 1000000000);
  flags.AddInt("alpha_permille", &alpha_permille, 1, 500);
  flags.AddInt("min_change_pct", &min_change_pct, 0, 1000);
  flags.AddStrings("fail_if", &conditions);
  std::vector<std::string> paths;
  bool help = false;
  if (auto s = flags.Parse(args, &paths, &help); !s.ok()) {
    return UsageError(io, "diff", std::string(s.message()));
  }
  if (help) return PrintCommandHelp(io, kDiffCommand);
  if (paths.size() != 2) {
    return UsageError(io, "diff",
                      "expects two sessions: BASELINE CANDIDATE (got " +
                          std::to_string(paths.size()) + ")");
  }
  std::vector<GateResult> gates;
  for (const std::string& c : conditions) {
    auto g = ParseDiffGate(c);
    if (!g.ok())
      return UsageError(io, "diff", std::string(g.status().message()));
    gates.push_back({*g});
  }
  std::unique_ptr<viewer::TraceStore> stores[2];
  for (int i = 0; i < 2; ++i) {
    auto store = Load(paths[i], io);
    if (!store.ok()) {
      std::fprintf(io.err, "podscope diff: %s: %s\n",
                   i == 0 ? "baseline" : "candidate",
                   std::string(store.status().message()).c_str());
      const absl::StatusCode code = store.status().code();
      return code == absl::StatusCode::kInternal ||
                     code == absl::StatusCode::kResourceExhausted
                 ? kExitInternal
                 : kExitUnreadable;
    }
    stores[i] = std::move(*store);
  }
  viewer::DiffOptions options;
  options.top = static_cast<size_t>(top);
  options.skip_steps = static_cast<size_t>(skip);
  options.alpha = static_cast<double>(alpha_permille) / 1000;
  options.min_change = static_cast<double>(min_change_pct) / 100;
  const viewer::SessionDiff diff =
      viewer::DiffSessions(*stores[0], *stores[1], options);
  bool failed = false;
  for (GateResult& g : gates) {
    auto holds = GateHolds(g.gate, diff, &g.observed);
    if (!holds.ok()) {
      return UsageError(io, "diff", std::string(holds.status().message()));
    }
    g.holds = *holds;
    failed = failed || g.holds;
  }
  const std::string text = json ? DiffJson(paths[0], paths[1], diff, gates)
                                : DiffText(paths[0], paths[1], diff, gates);
  if (std::fputs(text.c_str(), io.out) < 0) {
    std::fprintf(io.err, "podscope diff: cannot write the output\n");
    return kExitInternal;
  }
  return failed ? kExitGateFailed : kExitOk;
}

}  // namespace

const Command kDiffCommand = {
    "diff",
    "Compare two sessions: step time with a significance test, changes by "
    "category, op, scope and collective, recompiles; --fail_if for CI",
    kHelp,
    RunDiff,
};

}  // namespace podscope::tools
