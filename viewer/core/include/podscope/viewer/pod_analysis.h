// Multi-host analyses of one session (a TraceStore: every rank on one
// clock, our own traces or imported Kineto / XSpace / Chrome ones) that
// answer why a step is slow: per-step time categories per rank, the rank
// the others wait for in collectives, recompiles, the top work, the op
// roofline and device memory peaks. `podscope analyze` and the viewer's Pod
// panel print the same structs.
//
// Contract:
//  - A rank is one process of the store (its `process_index` when known,
//    else its position among the processes). Results never hold pointers
//    into the store except EventRefs, which stay valid while it lives.
//  - Every analysis is total: odd traces (negative durations, missing args,
//    args of the wrong type, no steps, one rank) give empty or partial
//    results, never a crash. Negative durations count as 0.
//  - Times are ns on the store's clock; shares are in [0, 1].
//  - Definitions (steps, categories, stragglers, late recompiles, roofline)
//    are stated beside each struct and in docs/analysis.md.
//  - Later changes to these structs are additive.
#ifndef PODSCOPE_VIEWER_POD_ANALYSIS_H_
#define PODSCOPE_VIEWER_POD_ANALYSIS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/viewer/trace_store.h"

namespace podscope::viewer {

struct PodAnalysisOptions {
  // How many entries the "top" lists keep (per device / host / rank where
  // the list is per device / host / rank); 0 keeps all.
  size_t top = 20;
  // A recompile (cache miss) is "late" when its step is greater than this
  // (see CompileEvent::late).
  int64_t warmup_steps = 2;
  // The straggler test (StragglerTest): a rank is named when the waiting
  // it caused is larger than the other ranks' with a one-sided p-value of
  // at most `straggler_alpha`, it caused at least `straggler_min_ratio`
  // times the others' mean, and it arrived last at at least
  // `straggler_min_collectives` collectives.
  double straggler_alpha = 0.05;
  double straggler_min_ratio = 1.5;
  uint64_t straggler_min_collectives = 2;
  // A scope of the straggler is "longer" in a step when its time there
  // exceeds the other ranks' median for the same name and step by this
  // factor and by at least `longer_scope_min_ns`.
  double longer_scope_factor = 1.1;
  int64_t longer_scope_min_ns = 1000;
};

// One process of the store.
struct RankInfo {
  ProcessId process = 0;
  HostId host = 0;
  std::string host_name;
  int64_t pid = 0;
  // process_index when the file knows it, else the position among the
  // processes.
  int32_t rank = 0;
};

// The ranks of the store, in process order (index i is RankIndex i of the
// results below).
std::vector<RankInfo> PodRanks(const TraceStore& store);

// ------------------------------------------------------- step breakdown
//
// Steps: on each rank, the outermost slices of its thread tracks named
// `train_step`, `ProfilerStep#N`, or (when none is so named) whose name
// contains "step" (case-insensitive); when several thread tracks of a rank
// hold steps, the one with the most. A step's number is its int64 arg
// `step`, else `step_num`, else the N of a name ending in `#N` or a name
// that is a number (XSpace step markers). Steps are matched across ranks
// by number when every step of every rank has a distinct number, else by
// order (the k-th step of each rank). A step's window is its slice,
// extended to the end of the device work its launches reach by flows on
// the rank's device streams (each execution running until the next one on
// its stream starts), and starting no earlier than the previous window's
// end: on an asynchronous runtime a step is the device's time on it.
// StepCell's start and duration are the window's.
//
// Categories: within a step's window [start, end) on a rank, every
// nanosecond goes to exactly one category, the first of these that covers
// it (union of intervals per category, then this priority):
//   kCompute             device-stream slices that are not collectives
//                        (kernels, transfers on the device's streams)
//   kCollectiveTransfer  collectives (device-stream slices with a
//                        `collective_id` or `wait_ns` arg, or named
//                        AllReduce, Broadcast, AllGather, ReduceScatter,
//                        AllToAll, Barrier, Reduce, Gather, Scatter, Send,
//                        Recv, or nccl*, or holding AllReduce, AllGather,
//                        ReduceScatter, AllToAll, all-reduce, all-gather,
//                        reduce-scatter, all-to-all, collective-permute)
//                        after their wait
//   kCollectiveWait      the first `wait_ns` of each collective (the rank
//                        waiting for the last one to arrive)
//   kDataLoading         thread slices whose name or track name holds
//                        "loader" or "dataloader" (`loader_prepare`)
//   kHost                other thread-track slices, except the step slices
//                        themselves and the slices that enclose a step
//   kIdle                nothing of the above
// So the categories sum to the step's duration; overlapped communication
// shows as compute.
enum class StepCategory : int {
  kCompute = 0,
  kCollectiveTransfer = 1,
  kCollectiveWait = 2,
  kDataLoading = 3,
  kHost = 4,
  kIdle = 5,
};
inline constexpr int kStepCategoryCount = 6;
// "compute", "collective_transfer", "collective_wait", "data_loading",
// "host", "idle".
std::string_view StepCategoryName(StepCategory c);

struct StepCell {
  bool present = false;  // the rank has this step
  EventRef event;
  int64_t number = -1;  // the step's number, -1 when unknown
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  std::array<int64_t, kStepCategoryCount> category_ns{};
  int64_t category(StepCategory c) const {
    return category_ns[static_cast<int>(c)];
  }
};

struct StepRow {
  // The step number (matched by number), or the position (by order).
  int64_t step = 0;
  std::vector<StepCell> ranks;  // one per rank (RankIndex)
  // The rank whose step took longest (the first on ties); -1 when none
  // has the step, or when several have it and all took the same time.
  int slowest_rank = -1;
  // Longest minus shortest duration among the ranks that have the step.
  int64_t spread_ns = 0;
};

struct RankStepTotals {
  uint64_t steps = 0;
  int64_t total_ns = 0;
  int64_t median_ns = 0;
  int64_t max_ns = 0;
  std::array<int64_t, kStepCategoryCount> category_ns{};
  // How many steps this rank was the slowest in.
  uint64_t slowest_count = 0;
};

struct StepBreakdown {
  std::vector<RankInfo> ranks;
  std::vector<StepRow> rows;           // by step
  std::vector<RankStepTotals> totals;  // one per rank
  bool matched_by_number = false;
};

StepBreakdown AnalyzeSteps(const TraceStore& store,
                           const PodAnalysisOptions& options = {});

// The step row whose window on `rank` contains time t, or -1.
int FindStepRow(const StepBreakdown& steps, int rank, int64_t t);

// ----------------------------------------------------------- stragglers
//
// Collectives are joined across ranks by their `collective_id` arg (a
// string or a number); without one, the k-th collective of a name on each
// rank is joined with the k-th of that name on the others. Only joins that
// reach at least two ranks count. The last to arrive is the rank with the
// latest start.

struct CollectiveArrival {
  int rank = 0;  // RankIndex
  EventRef event;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t wait_ns = -1;  // the recorded `wait_ns`, -1 without one
};

struct JoinedCollective {
  std::string name;
  // The `collective_id`, or "<name>#<k>" when joined by order.
  std::string key;
  bool joined_by_id = false;
  std::vector<CollectiveArrival> arrivals;  // by rank
  int last_rank = -1;                       // the rank that arrived last
  // Last arrival minus the second latest: how late the last one was.
  int64_t late_by_ns = 0;
  // Last arrival minus the first.
  int64_t spread_ns = 0;
  // Sum over the other ranks of (last arrival - their arrival): the wait
  // the last rank caused.
  int64_t wait_caused_ns = 0;
  // The step row (StepBreakdown::rows) holding the last arrival, -1: none.
  int step_row = -1;
};

struct RankStraggle {
  int rank = 0;
  uint64_t last_count = 0;  // collectives it arrived last at
  int64_t wait_caused_ns = 0;
  int64_t late_by_ns = 0;  // summed over those collectives
  int64_t waited_ns = 0;   // summed recorded `wait_ns` of its own
};

// A scope of the straggler that took longer than on the other ranks.
struct LongerScope {
  std::string name;
  // Steps (row numbers' `step`) where it was longer.
  std::vector<int64_t> steps;
  int64_t own_ns = 0;            // its time in those steps
  int64_t others_median_ns = 0;  // the others' medians summed over them
  int64_t excess_ns() const { return own_ns - others_median_ns; }
};

struct Straggler {
  int rank = -1;
  uint64_t last_count = 0;
  uint64_t joined = 0;  // collectives joined across ranks
  int64_t wait_caused_ns = 0;
  // Steps (StepRow::step) in which it arrived last at some collective.
  std::vector<int64_t> steps;
  // Names of the collectives it arrived last at, with how often.
  std::vector<std::pair<std::string, uint64_t>> collectives;
  // Largest excess first.
  std::vector<LongerScope> longer_scopes;
};

// Whether one rank made the others wait significantly more than they made
// each other wait: time, not counts (a rank last barely more often than
// the others but by far longer is the straggler; one last a little more
// often by chance is not).
//
// Units are the step rows that hold a joined collective (a collective
// belongs to the row around its last arrival; collectives outside every
// step are left out), or each joined collective when fewer than two rows
// hold one. caused[u][r] is the wait the collectives of unit u whose last
// arrival was rank r caused (JoinedCollective::wait_caused_ns). The
// candidate is the rank that caused the most in all; per unit,
// d[u] = caused[u][candidate] - the mean of caused[u][r] over the other
// ranks, and a one-sided paired t-test (Student's t with units - 1 degrees
// of freedom) asks whether the mean of d exceeds 0. The p-value is
// multiplied by the number of ranks (Bonferroni: the candidate was picked
// as the worst) and capped at 1; with every d equal it is 0 when they are
// positive, 1 otherwise; with fewer than two units it is 1.
struct StragglerTest {
  int candidate = -1;  // RankIndex; -1: no rank caused any wait
  bool by_steps = false;
  uint64_t units = 0;
  double mean_excess_ns = 0;  // the mean of d
  double t = 0;
  double p_value = 1;
  // The candidate's caused wait over the mean of the other ranks' (+inf
  // when they caused none).
  double ratio = 0;
};

struct StragglerReport {
  std::vector<JoinedCollective> collectives;  // by last arrival's time
  std::vector<RankStraggle> ranks;            // one per rank
  uint64_t joined_by_id = 0;
  uint64_t joined_by_order = 0;
  StragglerTest test;
  // Set when the test names its candidate (PodAnalysisOptions).
  std::optional<Straggler> straggler;
  // Index in `collectives` of the longest wait of one rank at one
  // collective (the widest spread of arrivals; the first on ties), -1
  // with none.
  int worst_wait = -1;
};

StragglerReport AnalyzeStragglers(const TraceStore& store,
                                  const StepBreakdown& steps,
                                  const PodAnalysisOptions& options = {});

// ------------------------------------------------------------ recompiles
//
// Every slice named `Compile` (any thread): graph_hash (string or number,
// as a string), cache_hit, signature, graph_ops and step args when
// present. A compile is `late` when it missed the cache and its step (the
// `step` arg, else the step row around it) is after
// PodAnalysisOptions::warmup_steps, or, with no step known, when an
// earlier compile on its rank had the same family (signature with the
// dimensions erased: `f32[_,_] i32[]`). For each miss, `previous` is the
// earlier compile on the same rank of the nearest signature (fewest
// differing parameters, then the latest), and `changes` says what
// differed.

struct CompileEvent {
  int rank = 0;
  EventRef event;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  std::string graph_hash;
  std::optional<bool> cache_hit;
  std::string signature;
  int64_t graph_ops = -1;
  int64_t step = -1;  // the `step` arg, else the containing row's step
  int step_row = -1;  // StepBreakdown::rows index holding it, -1: none
  bool late = false;
  // The stall it put into its step: its duration when it missed.
  int64_t stall_ns = 0;
  // Index in CompileReport::compiles of the nearest earlier compile, -1.
  int previous = -1;
  // E.g. "parameter 0: f32[256,1,28,28] -> f32[100,1,28,28]",
  // "graph_hash: 12 -> 34", "parameters: 3 -> 4".
  std::vector<std::string> changes;
};

struct CompileReport {
  std::vector<CompileEvent> compiles;  // by rank, then time
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t late_misses = 0;
  int64_t miss_ns = 0;  // time in compiles that missed
};

CompileReport AnalyzeCompiles(const TraceStore& store,
                              const StepBreakdown& steps,
                              const PodAnalysisOptions& options = {});

// -------------------------------------------------------------- top work
//
// Self time (duration minus direct children) of every slice by name, per
// device (device-stream tracks of one host and device id) and per host
// (thread tracks). `step_share` is self time over the summed step time of
// the ranks on that host (0 without steps).

struct WorkEntry {
  std::string name;
  HostId host = 0;
  std::string host_name;
  int32_t device_id = -1;  // -1: host (thread) work
  uint64_t count = 0;
  int64_t total_ns = 0;
  int64_t self_ns = 0;
  double step_share = 0;
};

// Collective time on a rank that overlaps device compute.
struct RankOverlap {
  int rank = 0;
  int64_t collective_ns = 0;  // union of its collectives
  int64_t overlapped_ns = 0;  // of which compute ran at the same time
  double overlap() const {
    return collective_ns > 0 ? static_cast<double>(overlapped_ns) /
                                   static_cast<double>(collective_ns)
                             : 0;
  }
};

struct TopWork {
  // Largest self time first within each device / host; at most `top` per
  // device / host.
  std::vector<WorkEntry> device_ops;
  std::vector<WorkEntry> host_scopes;
  std::vector<RankOverlap> overlap;  // one per rank
};

TopWork AnalyzeTopWork(const TraceStore& store, const StepBreakdown& steps,
                       const PodAnalysisOptions& options = {});

// ------------------------------------------------- op profile, roofline
//
// Device-stream slices with int64 `flops` and/or `bytes_accessed` args,
// per host, summed by slice name and by the `op` arg (op kind). GFLOP/s =
// flops / time_ns; intensity = flops / bytes; with the host's
// `machine.peak_gflops` and `machine.peak_gbps` metadata attributes, the
// roofline bound is min(peak_gflops, intensity * peak_gbps) GFLOP/s and
// `fraction_of_bound` = gflops / bound (0 when the peaks are unknown).
// A recorded peak measured on a loaded machine can be below what the
// host's kernels reached; then the peak used is the best rate a kernel
// name reached (GFLOP/s, and bytes / time for GB/s), `understated` says
// so, and no op shows more than 100 % of its bound.

struct HostPeak {
  HostId host = 0;
  std::string host_name;
  double peak_gflops = 0;      // the peak used; 0: unknown
  double peak_gbps = 0;        // the peak used; 0: unknown
  double recorded_gflops = 0;  // machine.peak_gflops as recorded
  double recorded_gbps = 0;    // machine.peak_gbps as recorded
  bool understated = false;    // a kernel beat a recorded peak
  std::string source;          // machine.peak_source
  int64_t threads = 0;         // machine.peak_threads
};

struct RooflineEntry {
  std::string name;  // op name or op kind
  HostId host = 0;
  uint64_t count = 0;
  int64_t flops = 0;
  int64_t bytes = 0;
  int64_t time_ns = 0;
  double gflops = 0;     // achieved GFLOP/s
  double intensity = 0;  // flops per byte, 0 without bytes
  double bound_gflops = 0;
  double fraction_of_bound = 0;
  // The bound is the memory roof (intensity * peak_gbps < peak_gflops).
  bool memory_bound = false;
};

struct OpProfile {
  std::vector<HostPeak> peaks;  // one per host with any peak attribute
  // Most time first, at most `top` per host.
  std::vector<RooflineEntry> by_name;
  std::vector<RooflineEntry> by_kind;
};

OpProfile AnalyzeOps(const TraceStore& store,
                     const PodAnalysisOptions& options = {});

// ---------------------------------------------------------------- memory
//
// Per device track `device N allocations`: `Allocate` / `Free` instants
// (buffer_id, bytes, in_use, op, scope). Bytes in use after each event is
// its `in_use` arg, else the running sum of allocated minus freed bytes;
// the peak is the first time the largest value is reached, and the live
// buffers are those allocated at or before it and not yet freed (largest
// first, at most `top`). A device without allocation events but with a
// `device N memory in use` counter reports that counter's maximum
// (from_allocations false, no buffers).

struct LiveBuffer {
  int64_t buffer_id = -1;
  int64_t bytes = 0;
  std::string op;
  std::string scope;
  int64_t allocated_ns = 0;
};

struct DeviceMemory {
  int rank = 0;
  HostId host = 0;
  std::string host_name;
  int32_t device_id = 0;
  bool from_allocations = false;
  int64_t peak_bytes = 0;
  int64_t peak_ns = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t live_count = 0;  // live buffers at the peak (all of them)
  std::vector<LiveBuffer> live_at_peak;
};

std::vector<DeviceMemory> AnalyzeMemory(const TraceStore& store,
                                        const PodAnalysisOptions& options = {});

// ------------------------------------------------------------ everything

struct PodAnalysis {
  StepBreakdown steps;
  StragglerReport stragglers;
  CompileReport compiles;
  TopWork top;
  OpProfile ops;
  std::vector<DeviceMemory> memory;
  // What was analysed: the hosts' names (by HostId), the processes, the
  // events, and the first event's time (0 without events).
  std::vector<std::string> host_names;
  size_t processes = 0;
  uint64_t events = 0;
  int64_t first_ns = 0;
};

PodAnalysis AnalyzePod(const TraceStore& store,
                       const PodAnalysisOptions& options = {});

// The same analysis with memory bounded by a host rather than by the
// session: `session` is the session opened as an overview (its hosts and
// processes, no events: OpenOptions::detail_files, best with
// overview_from_index). Each host's files are loaded alone
// (OpenOptions::files), measured (steps and categories, collective
// arrivals, compiles, top work, ops, memory: what one rank's events give)
// and dropped, `threads` hosts at a time (0: one per hardware thread);
// then the ranks are joined (step rows, collectives, the straggler test,
// compile verdicts) from those summaries. When a straggler is named, the
// hosts are read once more for its longer scopes. The result equals
// AnalyzePod over the whole session loaded at once, EventRefs included
// (they refer to that store). `problems` receives what a host's load
// reported (damaged files; a file that can no longer be read is an error
// naming it). `progress`, when set, is called (one call at a time, from
// the reading threads) as hosts are done.
absl::StatusOr<PodAnalysis> AnalyzePodByHost(
    const TraceStore& session, const PodAnalysisOptions& options = {},
    int threads = 0, std::vector<LoadProblem>* problems = nullptr,
    const std::function<void(size_t hosts_done, size_t hosts_total)>& progress =
        {});

}  // namespace podscope::viewer

#endif  // PODSCOPE_VIEWER_POD_ANALYSIS_H_
