// Per-thread CPU-time stack sampling.
//
// Each registered thread gets a POSIX timer on its own CPU-time clock that
// sends it a real-time signal every 1/rate_hz seconds of CPU time it uses.
// The handler unwinds the interrupted stack (frame_unwinder.h; libunwind
// where that declines) and pushes the sample into that thread's SampleRing;
// a consumer (the session's writer thread) drains the rings and symbolises
// the addresses later.
//
// Why the thread's CPU-time clock and not CLOCK_MONOTONIC: samples then
// measure where CPU time goes (a CPU profile), a thread blocked in I/O or a
// lock costs nothing and gets no signals (so no EINTR storms in its
// syscalls), and each thread's timer runs on its own clock, so threads are
// not sampled in lockstep. The price: the kernel checks CPU-time timers on
// the scheduler tick (CONFIG_HZ, 250 on Debian), so above HZ one signal
// covers several periods; the kernel reports those as timer overruns and the
// sample's `weight` carries them, so weighted counts stay exact.
//
// Process-wide state: a signal handler is process-global, so only one
// sampler may be active at a time. The slots the handler reads live in a
// static table that is never freed, so a late signal can never touch freed
// memory. See stack_sampler.cc for the handler's protocol.
#ifndef PODSCOPE_PROFILER_SRC_SAMPLING_STACK_SAMPLER_H_
#define PODSCOPE_PROFILER_SRC_SAMPLING_STACK_SAMPLER_H_

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "src/sampling/frame_unwinder.h"
#include "src/sampling/sample_ring.h"

namespace podscope::profiler::sampling {

struct SamplerOptions {
  // Samples per second of a thread's CPU time. 997, a prime, so sampling
  // does not beat in step with periodic work at round frequencies.
  int rate_hz = 997;
  // The signal used; 0 picks SIGRTMIN + 3. Must be a real-time signal,
  // SIGPROF, SIGUSR1 or SIGUSR2, and not used by anything else meanwhile.
  int signal = 0;
  // Capacity of each thread's ring (rounded up to a power of two). A sample
  // takes 536 bytes, so the default reserves 268 KiB per registered thread,
  // committed page by page as the ring first fills; a sample that lands on
  // a fresh page pays for its fault, so a smaller ring stops paying sooner.
  // At most ~100 samples per thread wait for a drain pass (100 ms at the
  // default rate, which the kernel's tick caps at HZ signals a second):
  // 512 cover five passes.
  size_t ring_samples = 512;
};

// Thread-safety: every method may be called from any thread (Drain() calls
// are serialised internally). The signal handler never takes the sampler's
// locks, so a registered thread may itself call any method.
// The signal handler's work on the sampled threads: samples taken, and the
// sampled thread's CPU time from the handler's claim of the sample to its
// exit, read for one claim in 16 (reading a thread's CPU clock is a system
// call). The kernel's delivery of the signal is not in it.
struct SamplerCost {
  uint64_t samples = 0;
  uint64_t timed_samples = 0;
  uint64_t timed_handler_ns = 0;
  // Stacks the cached unwinder walked, and those it left to libunwind.
  uint64_t fast_unwinds = 0;
  uint64_t fallback_unwinds = 0;
  // Stacks cut to the interrupted frame (or, under ThreadSanitizer, left
  // empty) because another thread's handler was inside libunwind.
  uint64_t leaf_only_unwinds = 0;
};

class StackSampler {
 public:
  using Sample = StackSample;
  // Threads that can be registered at once (the handler's static table).
  static constexpr int kMaxThreads = 1024;

  // Installs the signal handler and prepares libunwind. FailedPrecondition
  // if another sampler is active in this process; InvalidArgument for bad
  // options.
  static absl::StatusOr<std::unique_ptr<StackSampler>> Create(
      const SamplerOptions& options);

  StackSampler(const StackSampler&) = delete;
  StackSampler& operator=(const StackSampler&) = delete;
  ~StackSampler();  // Stop()s

  // Starts sampling the thread with kernel id `tid` (gettid()), which must
  // be a live thread of this process. May be called from any thread.
  // AlreadyExists if it is registered, ResourceExhausted past kMaxThreads,
  // FailedPrecondition after Stop().
  absl::Status RegisterThread(pid_t tid);
  // Registers those of `tids` not registered yet, under one lock, and
  // returns how many it registered; a tid that cannot be (exited, past
  // kMaxThreads, stopped) is skipped.
  size_t RegisterUnsampled(const std::vector<pid_t>& tids);

  // Stops sampling `tid`; its samples not yet drained are kept for the next
  // Drain(). Safe from any thread, while the thread lives or after it
  // exited; a tid that is not registered is ignored. Threads that exit
  // without unregistering are noticed and unregistered by Drain().
  void UnregisterThread(pid_t tid);

  // Hands every sample waiting in the rings (also those of unregistered and
  // exited threads) to `fn`, oldest first per thread, and returns how many.
  // Concurrent with sampling: samples taken meanwhile are either handed over
  // now, left for the next Drain, or counted in dropped(). Calls are
  // serialised; `fn` must not call back into the sampler.
  size_t Drain(const std::function<void(const Sample&)>& fn);

  // Samples lost so far because a thread's ring was full.
  uint64_t dropped() const;

  // What sampling has cost the sampled threads in this process so far, over
  // every sampler (cumulative; take differences).
  static SamplerCost Cost();

  // Threads currently sampled.
  size_t registered_threads() const;

  // The signal number in use.
  int signal_number() const { return signal_; }

  // Deletes every timer and restores the signal disposition that was in
  // place before Create(). Samples already taken stay drainable. Idempotent.
  void Stop();

 private:
  struct Registration {
    int slot = 0;
    uint32_t generation = 0;
    timer_t timer{};
    std::shared_ptr<SampleRing> ring;
  };

  StackSampler(const SamplerOptions& options, int signal,
               const struct sigaction& previous);
  // `stack`: the thread's stack when it registers itself, else empty.
  absl::Status RegisterLocked(pid_t tid, const StackBounds& stack)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes the timer, waits until the handler is out of the slot, frees the
  // slot and parks the ring for the next Drain().
  void RetireLocked(Registration& registration)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rebuilds the unwinder's map of code and stacks (frame_unwinder.h) when
  // threads were registered or objects loaded or unloaded since it was
  // built.
  void RefreshUnwindMap();
  // Unregisters threads that exited: their CPU-time timer reads as
  // disarmed, which a live thread's never does.
  void ReapExitedThreadsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SamplerOptions options_;
  const int signal_;
  const struct sigaction previous_action_;

  // std::mutex, not absl::Mutex: Debian's prebuilt abseil is not built with
  // ThreadSanitizer, which then cannot see absl::Mutex's synchronisation.
  std::mutex drain_mu_;  // serialises Drain(); taken before mu_
  // Serialises map rebuilds; taken after mu_ when both are held.
  std::mutex map_mu_;
  bool map_stopped_ ABSL_GUARDED_BY(map_mu_) = false;
  std::atomic<bool> threads_added_{false};
  mutable std::mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<pid_t, Registration> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<int> free_slots_ ABSL_GUARDED_BY(mu_);
  // Rings of unregistered threads, until drained.
  std::vector<std::shared_ptr<SampleRing>> retired_rings_ ABSL_GUARDED_BY(mu_);
  uint64_t retired_dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace podscope::profiler::sampling

#endif  // PODSCOPE_PROFILER_SRC_SAMPLING_STACK_SAMPLER_H_
