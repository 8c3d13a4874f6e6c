// What changed between two sessions of the same job (`podscope diff`):
// step time per rank and for the job with a significance test over the
// steps, the largest changes by category, op, host scope and collective,
// new and vanished ops, and recompiles. docs/analysis.md defines every
// number.
//
// Ranks are matched by rank; steps by number when both sessions number
// them, else by order. Every comparison is of per-step samples (the
// baseline's steps against the candidate's) with a Mann-Whitney U test:
// a change is called significant only when its two-sided p-value is below
// `alpha` and it is at least `min_change` of the baseline, so that noise
// is never called a regression.
#ifndef PODSCOPE_VIEWER_SESSION_DIFF_H_
#define PODSCOPE_VIEWER_SESSION_DIFF_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "podscope/viewer/pod_analysis.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

struct DiffOptions {
  // Steps left out at the start of each session (compilation and warm-up
  // are compared as recompiles, not as step time).
  size_t skip_steps = 1;
  double alpha = 0.01;
  double min_change = 0.01;  // of the baseline, e.g. 1 %
  // Entries per list of changes (by op, scope, collective); 0: all.
  size_t top = 10;
};

// Mann-Whitney U test of two independent samples (normal approximation
// with the tie correction; exact enough from about eight values each).
struct UTest {
  double u = 0;        // U of the candidate sample
  double p_value = 1;  // two-sided; 1 when either sample is empty
  // Rank-biserial correlation in [-1, 1]: +1 when every candidate value
  // exceeds every baseline value, -1 when every one is below.
  double effect = 0;
};
UTest MannWhitney(std::span<const int64_t> baseline,
                  std::span<const int64_t> candidate);

// One figure of the diff: a per-step quantity in both sessions.
struct DiffFigure {
  std::string name;  // e.g. "step_ms.median", "op:conv2d", "rank 2"
  size_t base_n = 0, cand_n = 0;  // steps sampled
  // The figure's value in each session, in ns (a median, a p90 or a mean
  // per step, as the figure says).
  double base_ns = 0, cand_ns = 0;
  UTest test;
  bool significant = false;
  double delta_ns() const { return cand_ns - base_ns; }
  // Relative change; +inf/-inf... never: 0 when the baseline is 0 and the
  // candidate too, else a change from 0 counts as +100 %.
  double change() const;
};

struct RankDiff {
  int rank = 0;
  std::string label;  // "rank 2 (host)"
  DiffFigure median;  // step time median
  DiffFigure p90;
};

// A name whose time per step changed: an op on a device stream, a host
// scope, or a collective.
struct NamedChange {
  enum class Kind { kOp, kScope, kCollective };
  Kind kind = Kind::kOp;
  DiffFigure figure;  // mean time per step over all ranks (self time)
  // The rank whose mean per step changed most, and by how much.
  int rank = -1;
  double rank_delta_ns = 0;
  uint64_t base_count = 0, cand_count = 0;  // occurrences in the steps
};
const char* NamedChangeKindName(NamedChange::Kind k);

struct RecompileDiff {
  uint64_t base_misses = 0, cand_misses = 0;
  uint64_t base_late = 0, cand_late = 0;
  // Candidate misses whose signature (else graph hash) never compiled in
  // the baseline: "rank 1 step 7: <signature>".
  std::vector<std::string> new_misses;
};

struct SessionDiff {
  size_t ranks = 0;  // ranks matched
  size_t base_steps = 0, cand_steps = 0;
  bool matched_by_number = false;
  // The job's step time: per step, the slowest rank's.
  DiffFigure step_median;  // "step_ms.median"
  DiffFigure step_p90;     // "step_ms.p90"
  std::vector<RankDiff> per_rank;
  // Mean per step over the ranks, one per StepCategory.
  std::vector<DiffFigure> categories;
  // Largest |delta| first; `top` per kind.
  std::vector<NamedChange> changes;
  // Names in one session only, largest time per step first.
  std::vector<NamedChange> appeared, vanished;
  RecompileDiff recompiles;
  // The rank whose own work changed most: the median of its step time
  // less its collective waits (in a synchronous job every rank's step
  // follows the slowest rank's), -1: none; and that change.
  int largest_rank = -1;
  double largest_rank_own_ns = 0;
  // Figures a gate can name (every figure above, by name).
  std::vector<const DiffFigure*> Figures() const;
  const DiffFigure* Find(std::string_view name) const;
};

SessionDiff DiffSessions(const TraceStore& baseline,
                         const TraceStore& candidate,
                         const DiffOptions& options = {});

// The one-line verdict on the job's step time, e.g. "Step time: +6.5 %
// (median 12.3 ms -> 13.1 ms), significant (p = 0.0003)" or "Step time:
// no significant change (median -0.4 %, p = 0.41)".
std::string DiffVerdict(const SessionDiff& diff);

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_SESSION_DIFF_H_
