#include "src/sampling/stack_sampler.h"

#define UNW_LOCAL_ONLY  // before libunwind.h, or the local-only API won't link
#include <libunwind.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "podscope/base/sanitizers.h"
#include "src/sampling/frame_unwinder.h"

// Under ThreadSanitizer, signals that arrive outside a blocking call are
// queued and the handler runs later (at the next intercepted call) with a
// copy of the original ucontext, whose stack has moved on since. There, the
// handler unwinds its own live stack instead; see CaptureStack().
#if PODSCOPE_TSAN
#define PODSCOPE_SAMPLING_UNWIND_FROM_HANDLER 1
#endif
#if !defined(PODSCOPE_SAMPLING_UNWIND_FROM_HANDLER) && !defined(__x86_64__)
// Only on x86-64 is libunwind's unw_context_t the kernel's ucontext_t.
#define PODSCOPE_SAMPLING_UNWIND_FROM_HANDLER 1
#endif

namespace podscope::profiler::sampling {
namespace {

// ---------------------------------------------------------------------------
// What the signal handler sees.
//
// A slot of the static table holds one registered thread. Its `word` packs a
// generation (bumped on every registration in the slot) with a state:
//   kFree      -> no thread; signals for the slot are stale and ignored.
//   kActive    -> `tid` and `ring` are valid for this generation.
//   kInHandler -> the handler is writing into `ring`.
// The timer's signal carries (magic, generation, slot index). The handler
// claims the slot with one compare-exchange kActive -> kInHandler of that
// exact generation, so a signal from an earlier registration, a re-entrant
// signal, or one arriving after UnregisterThread() fails the exchange and
// touches nothing else. UnregisterThread() exchanges kActive -> kFree and
// spins while the handler holds kInHandler, after which it may free the ring.
// `tid` and `ring` are plain fields: written before the release store that
// publishes kActive and read only after the acquire exchange that claims it.
// ---------------------------------------------------------------------------
enum SlotState : uint64_t { kFree = 0, kActive = 1, kInHandler = 2 };

struct Slot {
  std::atomic<uint64_t> word{0};
  pid_t tid = 0;
  SampleRing* ring = nullptr;
  StackBounds stack;  // the handler's, for the cached unwinder
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

Slot g_slots[StackSampler::kMaxThreads];

// Only one sampler at a time owns the handler.
std::atomic<bool> g_sampler_active{false};

// What the handler has cost the sampled threads so far: samples taken, and
// for one sample in kTimedEvery, the sampled thread's CPU time from the
// handler's claim of its slot to its exit. CPU time, not wall time: a
// handler preempted on a busy machine would otherwise count the other
// process's time. Reading a thread's CPU clock is a system call, so only
// every kTimedEvery-th claim pays for it. Each claim takes a ticket
// (g_claims), so that handlers running at once on several threads never
// both skip, or both take, the same turn.
constexpr uint64_t kTimedEvery = 16;
std::atomic<uint64_t> g_claims{0};
std::atomic<uint64_t> g_handled{0};
std::atomic<uint64_t> g_timed{0};
std::atomic<uint64_t> g_timed_ns{0};

int64_t ThreadCpuNow() {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// The disposition that was in place before ours, for signals that are not
// from our timers (someone else's sigqueue/kill of the same signal).
std::atomic<uintptr_t> g_previous_handler{0};
std::atomic<int> g_previous_flags{0};

constexpr uint64_t kSignalMagic = 0x5053;  // "PS", in the top 16 bits

uint64_t SlotWord(uint32_t generation, SlotState state) {
  return (static_cast<uint64_t>(generation) << 2) | state;
}

uint64_t SignalValue(int slot, uint32_t generation) {
  return (kSignalMagic << 48) | (static_cast<uint64_t>(generation) << 16) |
         static_cast<uint64_t>(slot);
}

// Unwinds the interrupted stack into `ips`, leaf first. Async-signal-safe
// in practice: the cached unwinder reads only memory it has bounds-checked,
// and libunwind's local unwinder does not allocate. libunwind does take a
// lock of its own and, holding it, walks the loaded objects
// (dl_iterate_phdr, under the loader's lock). A thread interrupted while
// it holds the loader's lock (walking the objects itself, or in dlopen())
// must then not wait for that lock held by another thread's handler, which
// waits for the loader's lock in turn: only one handler at a time goes into
// libunwind (g_in_libunwind), and a handler that finds it taken keeps only
// the interrupted frame. Such a handler returns at once, so the one inside
// libunwind always gets the loader's lock in the end.
std::atomic<bool> g_in_libunwind{false};
std::atomic<uint64_t> g_leaf_only{0};

// Takes libunwind for this handler, or counts a sample cut short.
bool EnterLibunwind() {
  if (!g_in_libunwind.exchange(true, std::memory_order_acquire)) return true;
  g_leaf_only.fetch_add(1, std::memory_order_relaxed);
  return false;
}
void LeaveLibunwind() {
  g_in_libunwind.store(false, std::memory_order_release);
}

uint32_t CaptureStack(void* ucontext, uint64_t* ips, uint32_t max_depth,
                      StackBounds* stack) {
  unw_cursor_t cursor;
  uint32_t depth = 0;
#if !defined(PODSCOPE_SAMPLING_UNWIND_FROM_HANDLER)
  // The cached unwinder first (see frame_unwinder.h); libunwind for the
  // stacks it cannot vouch for.
  const UnwindRegisters registers = RegistersFromUcontext(ucontext);
  depth = UnwindFast(registers, ips, max_depth, stack);
  if (depth > 0) return depth;
  if (!EnterLibunwind()) {
    const uint64_t leaf = registers.value[UnwindRegisters::kIp];
    if (leaf == 0 || max_depth == 0) return 0;
    ips[0] = leaf;
    return 1;
  }
  // Straight from the interrupted registers: exact leaf, no handler frames,
  // no trip through the signal trampoline.
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(ucontext),
                      UNW_INIT_SIGNAL_FRAME) >= 0) {
    do {
      unw_word_t ip = 0;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
      ips[depth++] = ip;
    } while (depth < max_depth && unw_step(&cursor) > 0);
  }
  LeaveLibunwind();
#else
  // From the handler's own stack. When the kernel's signal frame is found,
  // only the frames below it (the interrupted code) are kept; a deferred
  // TSan delivery has none, and then the handler's frames stay in.
  (void)ucontext;
  (void)stack;
  if (!EnterLibunwind()) return 0;
  unw_context_t context;
  if (unw_getcontext(&context) >= 0 && unw_init_local(&cursor, &context) >= 0) {
    while (depth < max_depth && unw_step(&cursor) > 0) {
      if (unw_is_signal_frame(&cursor) > 0) {
        depth = 0;  // drop the handler frames collected so far
        continue;
      }
      unw_word_t ip = 0;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
      ips[depth++] = ip;
    }
  }
  LeaveLibunwind();
#endif
  return depth;
}

// Returns true when the signal came from one of our timers (even a stale
// one, which is then ignored), false when it belongs to someone else.
bool HandleTimerSignal(siginfo_t* info, void* ucontext) {
  if (info == nullptr || info->si_code != SI_TIMER) return false;
  const auto value = static_cast<uint64_t>(
      reinterpret_cast<uintptr_t>(info->si_value.sival_ptr));
  if ((value >> 48) != kSignalMagic) return false;
  const uint64_t index = value & 0xffff;
  const auto generation = static_cast<uint32_t>(value >> 16);
  if (index >= static_cast<uint64_t>(StackSampler::kMaxThreads)) return true;

  Slot& slot = g_slots[index];
  uint64_t expected = SlotWord(generation, kActive);
  if (!slot.word.compare_exchange_strong(
          expected, SlotWord(generation, kInHandler), std::memory_order_acquire,
          std::memory_order_relaxed)) {
    return true;  // stale, unregistered, or already inside the handler
  }
  const bool timed =
      g_claims.fetch_add(1, std::memory_order_relaxed) % kTimedEvery == 0;
  const int64_t cpu_entered = timed ? ThreadCpuNow() : 0;
  SampleRing* ring = slot.ring;
  // SIGEV_THREAD_ID delivers to the registered thread; checking costs one
  // syscall and guarantees the ring only ever has one producer.
  if (static_cast<pid_t>(syscall(SYS_gettid)) == slot.tid) {
    if (StackSample* sample = ring->TryReserve()) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      const int64_t entered =
          static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
      sample->tid = slot.tid;
      sample->monotonic_ns = entered;
      sample->weight = 1 + static_cast<uint32_t>(
                               info->si_overrun > 0 ? info->si_overrun : 0);
      sample->depth =
          CaptureStack(ucontext, sample->ips, kMaxStackDepth, &slot.stack);
      ring->Commit();
      g_handled.fetch_add(1, std::memory_order_relaxed);
      if (timed) {
        g_timed_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(
                                 ThreadCpuNow() - cpu_entered, 0)),
                             std::memory_order_relaxed);
        g_timed.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
  slot.word.store(SlotWord(generation, kActive), std::memory_order_release);
  return true;
}

void ProfilingSignalHandler(int signal, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;  // clock_gettime/syscall may clobber it
  if (!HandleTimerSignal(info, ucontext)) {
    // Not ours: hand it to whoever had the signal before. A default
    // disposition is not emulated: for real-time signals it would kill the
    // process, which a profiler must never do on its own.
    const uintptr_t previous =
        g_previous_handler.load(std::memory_order_acquire);
    const int flags = g_previous_flags.load(std::memory_order_relaxed);
    if (previous != reinterpret_cast<uintptr_t>(SIG_DFL) &&
        previous != reinterpret_cast<uintptr_t>(SIG_IGN)) {
      if (flags & SA_SIGINFO) {
        reinterpret_cast<void (*)(int, siginfo_t*, void*)>(previous)(
            signal, info, ucontext);
      } else {
        reinterpret_cast<void (*)(int)>(previous)(signal);
      }
    }
  }
  errno = saved_errno;
}

// The CPU-time clock of thread `tid`, as glibc's pthread_getcpuclockid
// builds it (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)); taking
// a tid rather than a pthread_t lets any thread register any other.
clockid_t ThreadCpuClock(pid_t tid) {
  constexpr clockid_t kPerThreadSched = 4 | 2;
  return static_cast<clockid_t>((~static_cast<unsigned>(tid)) << 3) |
         kPerThreadSched;
}

bool IsAllowedSignal(int signal) {
  return (signal >= SIGRTMIN && signal <= SIGRTMAX) || signal == SIGPROF ||
         signal == SIGUSR1 || signal == SIGUSR2;
}

// libunwind initialises itself (locks, lazy tables) on the first unwind;
// doing that here keeps it out of the signal handler.
void WarmUpUnwinder() {
  unw_context_t context;
  unw_cursor_t cursor;
  if (unw_getcontext(&context) < 0 || unw_init_local(&cursor, &context) < 0) {
    return;
  }
  for (int i = 0; i < 4 && unw_step(&cursor) > 0; ++i) {
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<StackSampler>> StackSampler::Create(
    const SamplerOptions& options) {
  if (options.rate_hz < 1 || options.rate_hz > 100'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("SamplerOptions.rate_hz must be in [1, 100000], got ",
                     options.rate_hz));
  }
  const int signal = options.signal == 0 ? SIGRTMIN + 3 : options.signal;
  if (!IsAllowedSignal(signal)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SamplerOptions.signal must be a real-time signal in [", SIGRTMIN, ", ",
        SIGRTMAX, "], SIGPROF, SIGUSR1 or SIGUSR2, got ", signal));
  }
  if (options.ring_samples < 1 || options.ring_samples > (size_t{1} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SamplerOptions.ring_samples must be in [1, 1048576], got ",
        options.ring_samples));
  }
  bool expected = false;
  if (!g_sampler_active.compare_exchange_strong(expected, true)) {
    return absl::FailedPreconditionError(
        "a StackSampler is already active in this process (the profiling "
        "signal handler is process-wide); Stop() it first");
  }

  // Per-thread caching keeps the unwinder lock-free in the handler. This
  // setting is process-wide, for any other libunwind user too.
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  WarmUpUnwinder();

  struct sigaction previous;
  std::memset(&previous, 0, sizeof(previous));
  if (sigaction(signal, nullptr, &previous) != 0) {
    const int error = errno;
    g_sampler_active.store(false);
    return absl::ErrnoToStatus(error, absl::StrCat("sigaction(", signal, ")"));
  }
  const uintptr_t previous_handler =
      (previous.sa_flags & SA_SIGINFO)
          ? reinterpret_cast<uintptr_t>(previous.sa_sigaction)
          : reinterpret_cast<uintptr_t>(previous.sa_handler);
  g_previous_flags.store(previous.sa_flags, std::memory_order_relaxed);
  g_previous_handler.store(previous_handler, std::memory_order_release);

  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = ProfilingSignalHandler;
  // SA_RESTART: a sample must not make the sampled thread's syscalls fail
  // with EINTR. No SA_ONSTACK: the unwinder needs more stack than a small
  // alternate signal stack (e.g. a sanitizer's) may have.
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(signal, &action, nullptr) != 0) {
    const int error = errno;
    g_sampler_active.store(false);
    return absl::ErrnoToStatus(error, absl::StrCat("sigaction(", signal, ")"));
  }
  InstallUnwindMap(UnwindMap::Build());
  return std::unique_ptr<StackSampler>(
      new StackSampler(options, signal, previous));
}

StackSampler::StackSampler(const SamplerOptions& options, int signal,
                           const struct sigaction& previous)
    : options_(options), signal_(signal), previous_action_(previous) {
  free_slots_.reserve(kMaxThreads);
  for (int i = kMaxThreads - 1; i >= 0; --i) free_slots_.push_back(i);
}

StackSampler::~StackSampler() { Stop(); }

absl::Status StackSampler::RegisterThread(pid_t tid) {
  // A thread that registers itself (on its first event) says where its
  // stack is, so that the cached unwinder walks it before the next map
  // rebuild lists its mapping. Not the main thread: its reported stack
  // reaches down to the rlimit, over pages not mapped yet.
  StackBounds own;
  if (tid == static_cast<pid_t>(syscall(SYS_gettid)) && tid != getpid()) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* low = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &low, &size) == 0 && size > 0) {
        own.map_serial = kAnyUnwindMap;
        own.lo = reinterpret_cast<uintptr_t>(low);
        own.hi = own.lo + size;
      }
      pthread_attr_destroy(&attr);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return RegisterLocked(tid, own);
}

size_t StackSampler::RegisterUnsampled(const std::vector<pid_t>& tids) {
  size_t added = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (pid_t tid : tids) {
      // Already sampled: skipped without building an error for it. A thread
      // that exited since it was listed, or one past the table, is not
      // sampled.
      if (threads_.contains(tid)) continue;
      if (RegisterLocked(tid, StackBounds{}).ok()) ++added;
    }
  }
  RefreshUnwindMap();
  return added;
}

void StackSampler::RefreshUnwindMap() {
  std::lock_guard<std::mutex> lock(map_mu_);
  if (map_stopped_) return;
  // New threads bring stacks the map does not bound yet; a dlopen() or
  // dlclose() brings or removes code.
  if (!threads_added_.exchange(false) && UnwindMapIsCurrent()) return;
  InstallUnwindMap(UnwindMap::Build());
}

absl::Status StackSampler::RegisterLocked(pid_t tid, const StackBounds& stack) {
  if (stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat("RegisterThread(", tid, "): the sampler is stopped"));
  }
  // A CPU clock id holds the tid in 29 bits; a larger one would silently
  // name another clock. Real tids stay below the kernel's PID_MAX_LIMIT
  // (2^22) anyway.
  if (tid <= 0 || tid >= (1 << 29)) {
    return absl::InvalidArgumentError(
        absl::StrCat("RegisterThread: invalid thread id ", tid));
  }
  if (threads_.contains(tid)) {
    return absl::AlreadyExistsError(
        absl::StrCat("thread ", tid, " is already registered"));
  }
  if (free_slots_.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot sample more than ", kMaxThreads, " threads at once"));
  }

  Registration registration;
  registration.slot = free_slots_.back();
  registration.ring = std::make_shared<SampleRing>(options_.ring_samples);
  Slot& slot = g_slots[registration.slot];
  registration.generation =
      static_cast<uint32_t>(slot.word.load(std::memory_order_relaxed) >> 2) + 1;
  // Publish the slot before the timer can fire.
  slot.tid = tid;
  slot.ring = registration.ring.get();
  slot.stack = stack;
  slot.word.store(SlotWord(registration.generation, kActive),
                  std::memory_order_release);

  struct sigevent event;
  std::memset(&event, 0, sizeof(event));
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal_;
  event.sigev_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(
      SignalValue(registration.slot, registration.generation)));
#ifdef sigev_notify_thread_id
  event.sigev_notify_thread_id = tid;
#else
  event._sigev_un._tid = tid;  // glibc < 2.35 has no name for it
#endif
  if (timer_create(ThreadCpuClock(tid), &event, &registration.timer) != 0) {
    const int error = errno;
    slot.word.store(SlotWord(registration.generation, kFree),
                    std::memory_order_release);
    if (error == EINVAL || error == ESRCH) {
      return absl::InvalidArgumentError(absl::StrCat(
          "RegisterThread: ", tid, " is not a live thread of this process"));
    }
    return absl::ErrnoToStatus(error,
                               absl::StrCat("timer_create for thread ", tid));
  }
  const int64_t period_ns = 1'000'000'000 / options_.rate_hz;
  struct itimerspec spec;
  spec.it_interval.tv_sec = period_ns / 1'000'000'000;
  spec.it_interval.tv_nsec = period_ns % 1'000'000'000;
  spec.it_value = spec.it_interval;
  if (timer_settime(registration.timer, 0, &spec, nullptr) != 0) {
    const int error = errno;
    timer_delete(registration.timer);
    slot.word.store(SlotWord(registration.generation, kFree),
                    std::memory_order_release);
    return absl::ErrnoToStatus(error,
                               absl::StrCat("timer_settime for thread ", tid));
  }
  free_slots_.pop_back();
  threads_.emplace(tid, std::move(registration));
  threads_added_.store(true);
  return absl::OkStatus();
}

void StackSampler::RetireLocked(Registration& registration) {
  // After timer_delete() the timer fires no more; a signal it already
  // queued may still arrive, and fails the generation check below.
  timer_delete(registration.timer);
  Slot& slot = g_slots[registration.slot];
  const uint64_t active = SlotWord(registration.generation, kActive);
  const uint64_t in_handler = SlotWord(registration.generation, kInHandler);
  while (true) {
    uint64_t expected = active;
    if (slot.word.compare_exchange_weak(
            expected, SlotWord(registration.generation, kFree),
            std::memory_order_acq_rel, std::memory_order_relaxed)) {
      break;
    }
    if (expected != in_handler && expected != active) break;  // already free
    // The handler is running on that thread; it takes microseconds and
    // cannot run on this thread (it would have finished before we resumed).
    sched_yield();
  }
  free_slots_.push_back(registration.slot);
  retired_rings_.push_back(std::move(registration.ring));
}

void StackSampler::UnregisterThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  RetireLocked(it->second);
  threads_.erase(it);
}

void StackSampler::ReapExitedThreadsLocked() {
  std::vector<pid_t> exited;
  for (auto& [tid, registration] : threads_) {
    struct itimerspec spec;
    if (timer_gettime(registration.timer, &spec) == 0 &&
        spec.it_interval.tv_sec == 0 && spec.it_interval.tv_nsec == 0) {
      exited.push_back(tid);
    }
  }
  for (pid_t tid : exited) {
    auto it = threads_.find(tid);
    RetireLocked(it->second);
    threads_.erase(it);
  }
}

size_t StackSampler::Drain(const std::function<void(const Sample&)>& fn) {
  std::lock_guard<std::mutex> drain_lock(drain_mu_);
  std::vector<std::shared_ptr<SampleRing>> rings;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ReapExitedThreadsLocked();
    rings.reserve(threads_.size() + retired_rings_.size());
    for (auto& [tid, registration] : threads_) {
      rings.push_back(registration.ring);
    }
    // Retired rings get no new samples or drops: account for them now.
    for (auto& ring : retired_rings_) {
      retired_dropped_ += ring->dropped();
      rings.push_back(std::move(ring));
    }
    retired_rings_.clear();
  }
  size_t drained = 0;
  Sample sample;
  for (const auto& ring : rings) {
    // At most one ring's worth per call, so a busy producer cannot keep a
    // slow consumer here forever.
    for (size_t i = 0; i < ring->capacity() && ring->Pop(&sample); ++i) {
      fn(sample);
      ++drained;
    }
  }
  return drained;
}

uint64_t StackSampler::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t total = retired_dropped_;
  for (const auto& [tid, registration] : threads_) {
    total += registration.ring->dropped();
  }
  for (const auto& ring : retired_rings_) total += ring->dropped();
  return total;
}

size_t StackSampler::registered_threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void StackSampler::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  for (auto& [tid, registration] : threads_) RetireLocked(registration);
  threads_.clear();
  // A timer signal generated before its timer_delete() may still be pending
  // on some thread. Restoring SIG_DFL under it would kill the process (the
  // default action of a real-time signal), so first discard every pending
  // instance: POSIX has setting SIG_IGN drop pending signals, in all threads.
  struct sigaction ignore;
  std::memset(&ignore, 0, sizeof(ignore));
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(signal_, &ignore, nullptr);
  sigaction(signal_, &previous_action_, nullptr);
  g_previous_handler.store(reinterpret_cast<uintptr_t>(SIG_DFL),
                           std::memory_order_release);
  {
    std::lock_guard<std::mutex> map_lock(map_mu_);
    map_stopped_ = true;
    InstallUnwindMap(nullptr);  // no handler takes samples any more
  }
  g_sampler_active.store(false);
}

SamplerCost StackSampler::Cost() {
  const FastUnwindStats fast = GetFastUnwindStats();
  SamplerCost cost;
  cost.samples = g_handled.load(std::memory_order_relaxed);
  cost.timed_samples = g_timed.load(std::memory_order_relaxed);
  cost.timed_handler_ns = g_timed_ns.load(std::memory_order_relaxed);
  cost.fast_unwinds = fast.unwound;
  cost.fallback_unwinds = fast.declined;
  cost.leaf_only_unwinds = g_leaf_only.load(std::memory_order_relaxed);
  return cost;
}

}  // namespace podscope::profiler::sampling
