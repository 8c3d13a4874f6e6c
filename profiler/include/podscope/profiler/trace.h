// The recording API: scopes, instants, counters and flows that a program
// marks its code with. Costs, measured in bench/profiler_bench.cc: with no
// session recording, one relaxed atomic load and a branch; recording, two
// timestamps and a store into a per-thread block (no lock, no allocation,
// no string copy: names from literals are interned once per call site).
//
//   PODSCOPE_TRACE("forward");                     // a scope
//   PODSCOPE_TRACE("load", "bytes", n, "file", path);  // args, evaluated
//                                                  // only when recording
//   podscope::profiler::Trace t(dynamic_name);     // RAII, dynamic name
//   PODSCOPE_INSTANT("checkpoint saved");
//   PODSCOPE_COUNTER("queue_depth", depth);
//   t.FlowOut(id);  ...  other.FlowIn(id);         // an arrow between events
//   podscope::profiler::SetThreadName("loader");
#ifndef PODSCOPE_PROFILER_TRACE_H_
#define PODSCOPE_PROFILER_TRACE_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "podscope/profiler/clock.h"

namespace podscope::profiler {

// Like TraceMe's levels: a session records events at or below its level.
enum class Level : int {
  kCritical = 1,  // always worth recording (steps, collectives)
  kInfo = 2,      // the default for PODSCOPE_TRACE
  kVerbose = 3,   // fine-grained detail
};

// Gives the calling thread's track a name (shown instead of "thread <tid>").
void SetThreadName(std::string_view name);

// The level recording sessions use now; changes take effect at once.
void SetLevel(Level level);

namespace internal {

// 0 when nothing records; otherwise the active session's level.
extern std::atomic<int> g_level;

inline bool Enabled(Level level) {
  return g_level.load(std::memory_order_relaxed) >= static_cast<int>(level);
}

enum RecordKind : uint8_t {
  kRecordSlice = 1,
  kRecordInstant = 2,
  kRecordCounter = 3,
  kRecordArgInt = 4,
  kRecordArgDouble = 5,
  kRecordArgString = 6,
  kRecordFlowOut = 7,
  kRecordFlowIn = 8,
};

// One slot of a thread's block. A slice or instant is followed by
// `attachments` slots holding its arguments and flows.
struct RawEvent {
  uint64_t a;     // slice: start ticks; instant, counter: ticks; arg: value
                  // bits; flow: id
  uint64_t b;     // slice: end ticks; counter: value bits
  uint32_t name;  // name, argument key or counter name id
  uint8_t kind;
  uint8_t attachments;
  uint16_t reserved;
};
static_assert(sizeof(RawEvent) == 24);

// The calling thread's position in its current block. Constant-initialised
// so that reaching it is a plain %fs-relative access, with no TLS wrapper
// call on the hot path.
struct ThreadCursor {
  RawEvent* next = nullptr;
  RawEvent* end = nullptr;
  std::atomic<uint32_t>* committed = nullptr;
  uint32_t index = 0;  // slots reserved in the block so far
};
extern thread_local constinit ThreadCursor t_cursor
    __attribute__((tls_model("initial-exec")));

// Reserves `n` contiguous slots in a fresh block; nullptr when events are
// being dropped (counted).
RawEvent* ReserveSlow(uint32_t n);
void RecordSliceSlow(uint64_t start, uint64_t end, uint32_t name);

// The cursor is named directly, never bound to a reference: GCC 12's UBSan
// null check misreports a reference to this initial-exec thread-local as
// null in some inlined callers.
inline RawEvent* Reserve(uint32_t n) {
  // With no block, next == end == nullptr and the test fails.
  if (__builtin_expect(static_cast<size_t>(t_cursor.end - t_cursor.next) >= n,
                       true)) {
    RawEvent* e = t_cursor.next;
    t_cursor.next += n;
    t_cursor.index += n;
    return e;
  }
  return ReserveSlow(n);
}

// Makes the slots reserved so far visible to the session's writer thread.
inline void Commit() {
  t_cursor.committed->store(t_cursor.index, std::memory_order_release);
}

// The hot path of a scope without arguments or flows.
__attribute__((always_inline)) inline void RecordSlice(uint64_t start,
                                                       uint64_t end,
                                                       uint32_t name) {
  RawEvent* e = t_cursor.next;
  if (__builtin_expect(e != t_cursor.end, true)) {
    *e = {start, end, name, kRecordSlice, 0, 0};
    t_cursor.next = e + 1;
    t_cursor.committed->store(++t_cursor.index, std::memory_order_release);
    return;
  }
  RecordSliceSlow(start, end, name);
}

// A call site's name, interned on first use.
struct NameSite {
  const char* const name;
  std::atomic<uint32_t> id{0};
};
uint32_t InternSite(NameSite* site);
inline uint32_t SiteId(NameSite* site) {
  const uint32_t id = site->id.load(std::memory_order_relaxed);
  return __builtin_expect(id != 0, true) ? id : InternSite(site);
}
// Interns a dynamic name through a per-thread cache.
uint32_t InternDynamic(std::string_view name);

// One argument, converted when the scope starts.
struct PendingArg {
  uint32_t key;
  uint8_t kind;
  uint64_t bits;
};

template <typename T>
PendingArg MakeArg(uint32_t key, const T& value) {
  using V = std::decay_t<T>;
  if constexpr (std::is_same_v<V, bool> || std::is_integral_v<V> ||
                std::is_enum_v<V>) {
    return {key, kRecordArgInt,
            static_cast<uint64_t>(static_cast<int64_t>(value))};
  } else if constexpr (std::is_floating_point_v<V>) {
    const double d = static_cast<double>(value);
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return {key, kRecordArgDouble, bits};
  } else {
    return {key, kRecordArgString, InternDynamic(std::string_view(value))};
  }
}

void RecordInstant(uint32_t name, Level level);
void RecordCounter(uint32_t name, double value);

// The open scopes of a recording thread, readable from other threads (the
// job's heartbeat reads them, scope_stack.h): a shadow stack of name ids
// and start ticks, and the ticks of the thread's last scope edge. Relaxed
// stores only; a reader may see a stack mid-change, never out of bounds.
struct ScopeStack {
  static constexpr uint32_t kDepth = 16;
  std::atomic<uint32_t> depth{0};
  std::atomic<uint32_t> names[kDepth] = {};
  std::atomic<uint64_t> starts[kDepth] = {};
  std::atomic<uint64_t> last_ticks{0};
  int64_t tid = 0;
  bool in_use = false;  // guarded by the registry's mutex
};
extern thread_local constinit ScopeStack* t_scopes
    __attribute__((tls_model("initial-exec")));
// The calling thread's stack, registered on first use; nullptr past the
// thread's exit.
ScopeStack* ThisThreadScopeStack();

__attribute__((always_inline)) inline void PushScope(uint32_t name,
                                                     uint64_t ticks) {
  ScopeStack* s = t_scopes;
  if (__builtin_expect(s == nullptr, false)) {
    s = ThisThreadScopeStack();
    if (s == nullptr) return;
  }
  const uint32_t d = s->depth.load(std::memory_order_relaxed);
  if (__builtin_expect(d < ScopeStack::kDepth, true)) {
    s->names[d].store(name, std::memory_order_relaxed);
    s->starts[d].store(ticks, std::memory_order_relaxed);
  }
  s->depth.store(d + 1, std::memory_order_relaxed);
  s->last_ticks.store(ticks, std::memory_order_relaxed);
}

__attribute__((always_inline)) inline void PopScope(uint64_t ticks) {
  ScopeStack* s = t_scopes;
  if (__builtin_expect(s == nullptr, false)) return;
  const uint32_t d = s->depth.load(std::memory_order_relaxed);
  s->depth.store(d == 0 ? 0 : d - 1, std::memory_order_relaxed);
  s->last_ticks.store(ticks, std::memory_order_relaxed);
}

}  // namespace internal

// A scope: records a slice from construction to destruction, if a session
// recording `level` was active at construction.
class Trace {
 public:
  static constexpr int kMaxArgs = 6;

  explicit Trace(internal::NameSite* site, Level level = Level::kInfo) {
    if (__builtin_expect(!internal::Enabled(level), true)) return;
    name_ = internal::SiteId(site);
    start_ = Ticks();
    internal::PushScope(name_, start_);
  }
  explicit Trace(std::string_view name, Level level = Level::kInfo) {
    if (!internal::Enabled(level)) return;
    name_ = internal::InternDynamic(name);
    start_ = Ticks();
    internal::PushScope(name_, start_);
  }
  // Arguments come from `make_args()`, a callable returning a tuple of
  // alternating keys (string literals) and values, called only when
  // recording.
  template <typename MakeArgs, typename = decltype(std::declval<MakeArgs>()())>
  Trace(internal::NameSite* site, MakeArgs&& make_args,
        Level level = Level::kInfo) {
    if (!internal::Enabled(level)) return;
    name_ = internal::SiteId(site);
    AddArgs(make_args(),
            std::make_index_sequence<std::tuple_size_v<decltype(make_args())> /
                                     2>{});
    start_ = Ticks();
    internal::PushScope(name_, start_);
  }

  ~Trace() {
    if (start_ == 0) return;
    const uint64_t end = Ticks();
    internal::PopScope(end);
    if (__builtin_expect((num_args_ | flow_out_ | flow_in_) == 0, true)) {
      internal::RecordSlice(start_, end, name_);
    } else {
      EmitWithAttachments(end);
    }
  }

  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  // Adds an argument after the fact (e.g. a result size).
  template <typename T>
  void AddArg(std::string_view key, const T& value) {
    if (start_ == 0 || num_args_ == kMaxArgs) return;
    args_[num_args_++] = internal::MakeArg(internal::InternDynamic(key), value);
  }
  // This scope starts a flow with `id` / is where flow `id` arrives.
  void FlowOut(uint64_t id) {
    if (start_ != 0) flow_out_ = id;
  }
  void FlowIn(uint64_t id) {
    if (start_ != 0) flow_in_ = id;
  }
  bool recording() const { return start_ != 0; }

 private:
  template <typename Tuple, size_t... I>
  void AddArgs(const Tuple& t, std::index_sequence<I...>) {
    static_assert(sizeof...(I) <= kMaxArgs, "too many trace arguments");
    ((args_[num_args_++] = internal::MakeArg(
          internal::InternDynamic(std::get<2 * I>(t)), std::get<2 * I + 1>(t))),
     ...);
  }

  __attribute__((noinline)) void EmitWithAttachments(uint64_t end) {
    const uint32_t extra = num_args_ + (flow_out_ != 0) + (flow_in_ != 0);
    internal::RawEvent* e = internal::Reserve(1 + extra);
    if (e == nullptr) return;
    *e++ = {
        start_, end, name_, internal::kRecordSlice, static_cast<uint8_t>(extra),
        0};
    for (int i = 0; i < num_args_; ++i, ++e) {
      *e = {args_[i].bits, 0, args_[i].key, args_[i].kind, 0, 0};
    }
    if (flow_out_ != 0)
      *e++ = {flow_out_, 0, 0, internal::kRecordFlowOut, 0, 0};
    if (flow_in_ != 0) *e++ = {flow_in_, 0, 0, internal::kRecordFlowIn, 0, 0};
    internal::Commit();
  }

  uint64_t start_ = 0;
  uint32_t name_ = 0;
  uint8_t num_args_ = 0;
  uint64_t flow_out_ = 0;
  uint64_t flow_in_ = 0;
  internal::PendingArg args_[kMaxArgs];
};

namespace internal {
// Captures waiting for a window of steps (capture_window.h); a step
// boundary costs one relaxed load while there are none.
extern std::atomic<int> g_step_watchers;
void StepBoundarySlow(int64_t step, bool begin);
inline void StepBoundary(int64_t step, bool begin) {
  if (__builtin_expect(g_step_watchers.load(std::memory_order_relaxed) != 0,
                       false)) {
    StepBoundarySlow(step, begin);
  }
}
NameSite* StepSite();
}  // namespace internal

namespace internal {
// The step's boundaries around its slice: constructed before the Trace
// and destroyed after it.
class StepMark {
 protected:
  explicit StepMark(int64_t step) : step_(step) { StepBoundary(step, true); }
  ~StepMark() { StepBoundary(step_, false); }

 private:
  const int64_t step_;
};
}  // namespace internal

// One training step: a "train_step" slice with argument "step" (what the
// analyses take for a step, at Level::kCritical), whose beginning and end
// also open and close the window of a capture asked for by steps
// (`podscope capture --steps 100:103`). Steps are numbered by the program,
// increasing.
class StepScope : private internal::StepMark, private Trace {
 public:
  explicit StepScope(int64_t step)
      : StepMark(step),
        Trace(
            internal::StepSite(),
            [step] { return std::make_tuple("step", step); },
            Level::kCritical) {}
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;
};

}  // namespace podscope::profiler

#define PODSCOPE_INTERNAL_CAT2(a, b) a##b
#define PODSCOPE_INTERNAL_CAT(a, b) PODSCOPE_INTERNAL_CAT2(a, b)
#define PODSCOPE_INTERNAL_SITE(name)                            \
  ([]() -> ::podscope::profiler::internal::NameSite* {          \
    static ::podscope::profiler::internal::NameSite site{name}; \
    return &site;                                               \
  }())

// PODSCOPE_TRACE("name") or PODSCOPE_TRACE("name", "key", value, ...):
// traces the enclosing scope at Level::kInfo.
#define PODSCOPE_TRACE(name, ...)                                         \
  ::podscope::profiler::Trace PODSCOPE_INTERNAL_CAT(                      \
      podscope_trace_, __LINE__)(PODSCOPE_INTERNAL_SITE(name) __VA_OPT__( \
      , [&]() { return std::make_tuple(__VA_ARGS__); }))

// The same at an explicit level.
#define PODSCOPE_TRACE_LEVEL(level, name)            \
  ::podscope::profiler::Trace PODSCOPE_INTERNAL_CAT( \
      podscope_trace_, __LINE__)(PODSCOPE_INTERNAL_SITE(name), level)

// PODSCOPE_STEP(n): the enclosing scope is training step n (StepScope).
#define PODSCOPE_STEP(step)                                             \
  ::podscope::profiler::StepScope PODSCOPE_INTERNAL_CAT(podscope_step_, \
                                                        __LINE__)(step)

#define PODSCOPE_INSTANT(name)                       \
  do {                                               \
    if (::podscope::profiler::internal::Enabled(     \
            ::podscope::profiler::Level::kInfo)) {   \
      ::podscope::profiler::internal::RecordInstant( \
          ::podscope::profiler::internal::SiteId(    \
              PODSCOPE_INTERNAL_SITE(name)),         \
          ::podscope::profiler::Level::kInfo);       \
    }                                                \
  } while (0)

#define PODSCOPE_COUNTER(name, value)                \
  do {                                               \
    if (::podscope::profiler::internal::Enabled(     \
            ::podscope::profiler::Level::kInfo)) {   \
      ::podscope::profiler::internal::RecordCounter( \
          ::podscope::profiler::internal::SiteId(    \
              PODSCOPE_INTERNAL_SITE(name)),         \
          static_cast<double>(value));               \
    }                                                \
  } while (0)

#endif  // PODSCOPE_PROFILER_TRACE_H_
