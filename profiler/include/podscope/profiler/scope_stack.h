// Where a thread is, seen from another thread: the open PODSCOPE_TRACE
// scopes of each thread that records, and when it last opened or closed
// one. The job's heartbeat reads them to say where a rank is when a
// collective waits for it (docs/doctor.md).
//
// Contract:
// - Scopes are tracked while a session records them (the same condition as
//   recording the scope): the hot path stores a name id and the start ticks
//   into a per-thread shadow stack with relaxed atomics, nothing more.
// - Reads are lock-free against the recording threads: a stack read while
//   its thread opens or closes a scope may show either side of that edge.
// - Deeper than ScopeStack::kDepth (16) scopes are counted, not named.
#ifndef PODSCOPE_PROFILER_SCOPE_STACK_H_
#define PODSCOPE_PROFILER_SCOPE_STACK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace podscope::profiler {

struct ThreadScopes {
  int64_t tid = 0;
  bool main_thread = false;  // the process's first thread
  // Outermost first: {"train_step", "backward"}.
  std::vector<std::string> scopes;
  // Open scopes beyond the named ones.
  int hidden_depth = 0;
  // Profiler clock: when the innermost scope opened (0 without one), and
  // when the thread last opened or closed a scope (0 never).
  int64_t innermost_since_ns = 0;
  int64_t last_event_ns = 0;
};

// The calling thread's id, as ThreadScopes::tid names it.
int64_t CurrentThreadId();

// Thread `tid`'s scopes, if it has recorded a scope and not exited.
std::optional<ThreadScopes> ReadThreadScopes(int64_t tid);

// Every live thread that has recorded a scope.
std::vector<ThreadScopes> ReadAllThreadScopes();

// The calling thread's open scopes as name ids, outermost first: up to
// `max` written to `ids`; returns how many. No lock, no allocation (the
// collective journal calls it for every collective).
int CaptureScopeIds(uint32_t* ids, int max);
// The name of a scope id from CaptureScopeIds.
std::string ScopeName(uint32_t id);

}  // namespace podscope::profiler

#endif  // PODSCOPE_PROFILER_SCOPE_STACK_H_
