// The per-thread shadow stacks of open scopes (trace.h's ScopeStack) and
// their readers (scope_stack.h).

#include "podscope/profiler/scope_stack.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "podscope/profiler/clock.h"
#include "podscope/profiler/trace.h"
#include "src/string_registry.h"
#include "src/thread_buffer.h"

namespace podscope::profiler {
namespace internal {

thread_local constinit ScopeStack* t_scopes
    __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// Stacks of exited threads are reused by new ones, so a process that
// churns threads holds as many stacks as it ever had threads at once.
struct StackRegistry {
  std::mutex mu;
  std::vector<ScopeStack*> stacks;  // never freed
};

StackRegistry& Registry() {
  static auto* registry = new StackRegistry();
  return *registry;
}

thread_local bool t_scopes_exited = false;

struct StackOwner {
  ScopeStack* stack = nullptr;
  ~StackOwner() {
    t_scopes_exited = true;
    t_scopes = nullptr;
    if (stack == nullptr) return;
    std::lock_guard<std::mutex> lock(Registry().mu);
    stack->in_use = false;
  }
};
thread_local StackOwner t_stack_owner;

}  // namespace

ScopeStack* ThisThreadScopeStack() {
  if (t_scopes != nullptr) return t_scopes;
  if (t_scopes_exited) return nullptr;
  StackRegistry& registry = Registry();
  ScopeStack* stack = nullptr;
  {
    std::lock_guard<std::mutex> lock(registry.mu);
    for (ScopeStack* s : registry.stacks) {
      if (!s->in_use) {
        stack = s;
        break;
      }
    }
    if (stack == nullptr) {
      stack = new ScopeStack();
      registry.stacks.push_back(stack);
    }
    stack->in_use = true;
    stack->tid = CurrentTid();
    stack->depth.store(0, std::memory_order_relaxed);
    stack->last_ticks.store(0, std::memory_order_relaxed);
  }
  t_stack_owner.stack = stack;
  t_scopes = stack;
  return stack;
}

}  // namespace internal

namespace {

// Nanoseconds per tick, measured once, for turning a stack's ticks into
// the profiler clock by their age.
double NsPerTick() {
  static const double ns_per_tick = CalibrateTicks(10).ns_per_tick;
  return ns_per_tick;
}

ThreadScopes Read(const internal::ScopeStack& s, uint64_t now_ticks,
                  int64_t now_ns) {
  const auto at = [&](uint64_t ticks) -> int64_t {
    if (ticks == 0) return 0;
    const int64_t age = static_cast<int64_t>(
        static_cast<double>(static_cast<int64_t>(now_ticks - ticks)) *
        NsPerTick());
    return now_ns - std::max<int64_t>(age, 0);
  };
  ThreadScopes out;
  out.tid = s.tid;
  out.main_thread = s.tid == getpid();
  const uint32_t depth = s.depth.load(std::memory_order_relaxed);
  const uint32_t named = std::min(depth, internal::ScopeStack::kDepth);
  const internal::StringRegistry& strings = internal::StringRegistry::Get();
  for (uint32_t i = 0; i < named; ++i) {
    out.scopes.emplace_back(
        strings.Lookup(s.names[i].load(std::memory_order_relaxed)));
  }
  out.hidden_depth = static_cast<int>(depth - named);
  if (named > 0) {
    out.innermost_since_ns =
        at(s.starts[named - 1].load(std::memory_order_relaxed));
  }
  out.last_event_ns = at(s.last_ticks.load(std::memory_order_relaxed));
  return out;
}

}  // namespace

int64_t CurrentThreadId() { return internal::CurrentTid(); }

int CaptureScopeIds(uint32_t* ids, int max) {
  const internal::ScopeStack* s = internal::t_scopes;
  if (s == nullptr || max <= 0) return 0;
  const int depth = static_cast<int>(std::min(
      s->depth.load(std::memory_order_relaxed), internal::ScopeStack::kDepth));
  const int n = std::min(depth, max);
  for (int i = 0; i < n; ++i) {
    ids[i] = s->names[i].load(std::memory_order_relaxed);
  }
  return n;
}

std::string ScopeName(uint32_t id) {
  return std::string(internal::StringRegistry::Get().Lookup(id));
}

std::optional<ThreadScopes> ReadThreadScopes(int64_t tid) {
  internal::StackRegistry& registry = internal::Registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  const uint64_t now_ticks = Ticks();
  const int64_t now_ns = ProfilerNowNs();
  for (const internal::ScopeStack* s : registry.stacks) {
    if (s->in_use && s->tid == tid) return Read(*s, now_ticks, now_ns);
  }
  return std::nullopt;
}

std::vector<ThreadScopes> ReadAllThreadScopes() {
  internal::StackRegistry& registry = internal::Registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  const uint64_t now_ticks = Ticks();
  const int64_t now_ns = ProfilerNowNs();
  std::vector<ThreadScopes> out;
  for (const internal::ScopeStack* s : registry.stacks) {
    if (s->in_use) out.push_back(Read(*s, now_ticks, now_ns));
  }
  return out;
}

}  // namespace podscope::profiler
