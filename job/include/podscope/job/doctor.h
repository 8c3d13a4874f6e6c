// The job doctor's terms, with no device in sight: what a rank says about
// its collectives and its issuing thread with every heartbeat (RankState),
// and the coordinator's judgement of the whole job from those states
// (JudgeJob): healthy, a stalled collective, or a desync. The sentences are
// docs/doctor.md's; every time is on the job clock (rank 0's profiler
// clock), in nanoseconds.
//
// Contract:
// - A RankState is small and bounded (DoctorLimits): a rank truncates what
//   it sends (TrimRankState) and the coordinator refuses a heartbeat whose
//   state exceeds a limit, so no rank can make it allocate or loop beyond
//   them.
// - JudgeJob is a pure function of the states and the time: the same
//   inputs give the same sentence, which is what the tests check.
#ifndef PODSCOPE_JOB_DOCTOR_H_
#define PODSCOPE_JOB_DOCTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace podscope::job {

// What one rank may say; beyond these a heartbeat is refused.
struct DoctorLimits {
  static constexpr int kMaxGroups = 4;
  static constexpr int kMaxScopes = 8;
  static constexpr size_t kMaxString = 64;
  // The whole state as received (protobuf bytes).
  static constexpr size_t kMaxStateBytes = 4096;
};

// One collective call as the rank's journal holds it.
struct CollectiveCall {
  int64_t sequence = -1;  // per group, from 0; the trace's collective_id
  std::string kind;       // "all_reduce", "broadcast", "barrier", ...
  std::string dtype;      // "f32", "i32", "pred"; "" when none
  int64_t count = 0;      // elements
  std::string op;         // "sum", ...; "" when not a reduction
  int32_t root = -1;      // broadcast's root; -1 when none
  // The issuing thread's open scopes when it entered, outermost first.
  std::vector<std::string> scopes;
  int64_t entered_ns = 0;
  int64_t finished_ns = 0;  // 0 while in flight
};

// A communicator group ("world", "grads", ...) on one rank.
struct GroupState {
  std::string group;
  int64_t last_entered = -1;   // sequence; -1 before the first
  int64_t last_finished = -1;  // sequence; -1 before the first
  CollectiveCall last_call;    // the call with sequence last_entered
  // The recent median duration of last_call.kind in this group (0: none).
  int64_t median_ns = 0;
  // How many ranks the group has (0: unknown, taken as the whole job). A
  // rank that never reported a smaller group is not one of its members.
  int size = 0;
};

// The thread that issued the rank's last collective (or the main thread).
struct IssuerState {
  int64_t tid = 0;
  bool main_thread = false;
  std::vector<std::string> scopes;  // open now, outermost first
  int64_t innermost_since_ns = 0;   // 0 without an open scope
  int64_t last_event_ns = 0;        // its last scope edge; 0 never
};

struct RankState {
  int64_t step = -1;  // the rank's current step; -1 unknown
  std::vector<GroupState> groups;
  std::optional<IssuerState> issuer;
  int64_t taken_ns = 0;  // when the rank read this state
};

// Cuts strings, stacks and groups to DoctorLimits (a stack keeps its
// innermost scopes, behind a "…").
void TrimRankState(RankState& state);

enum class VerdictKind { kHealthy = 0, kStalled = 1, kDesynced = 2, kDead = 3 };

struct Verdict {
  VerdictKind kind = VerdictKind::kHealthy;
  // The rank the sentence is about (the missing, silent or odd one); -1.
  int rank = -1;
  std::string group;
  int64_t sequence = -1;
  std::string sentence;
  // Stays the same while the verdict is about the same collective.
  std::string key() const;
};

std::string_view VerdictName(VerdictKind kind);

struct StallPolicy {
  // A collective is stalled after the larger of this and median_factor
  // times its recent median duration.
  absl::Duration stall_after = absl::Seconds(10);
  double median_factor = 20;
};

// The job's verdict from each rank's latest state (nullopt: none yet): a
// desync when ranks entered one sequence number of a group with different
// calls; a stall when some ranks entered a collective and others had not
// entered it by the threshold (as their states taken after it say), or
// when every rank entered it and none finished within the threshold.
Verdict JudgeJob(const std::vector<std::optional<RankState>>& ranks,
                 int64_t now_ns, const StallPolicy& policy);

// "all_reduce #12 of group world, finished" / "..., in flight for 3.2 s":
// a dead rank's last collective, for the dead-rank verdict; "" when it has
// none.
std::string LastCollectiveClause(const RankState& state, int64_t now_ns);

// "train_step > backward"; "(no open scope)" when empty.
std::string ScopePath(const std::vector<std::string>& scopes);

}  // namespace podscope::job

#endif  // PODSCOPE_JOB_DOCTOR_H_
