// Fan-out of independent work items over threads.
//
// Contract: ParallelFor(threads, n, fn) calls fn(i) exactly once for every
// i in [0, n) and returns when all calls have returned. Items are handed out
// one at a time in increasing order, so uneven items balance. It uses at
// most min(n, ThreadCount(threads)) threads, the calling thread among them;
// with one, every call runs on the calling thread, in order. fn must be
// safe to call concurrently for different i and must not throw.
//
// ParallelForWorkers(threads, n, fn) is the same with fn(worker, i): worker
// in [0, WorkerCount(threads, n)) names the thread running the call (0 is
// the caller), so that each thread can work in buffers of its own.
#ifndef PODSCOPE_BASE_PARALLEL_H_
#define PODSCOPE_BASE_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace podscope::base {

// The cores this process may use (at least 1).
int HardwareThreads();

// `requested` threads, or HardwareThreads() when it is 0 or less.
inline int ThreadCount(int requested) {
  return requested > 0 ? requested : HardwareThreads();
}

// How many threads ParallelFor(threads, n, ...) uses.
inline size_t WorkerCount(int threads, size_t n) {
  return std::min<size_t>(n, static_cast<size_t>(ThreadCount(threads)));
}

template <typename Fn>
void ParallelForWorkers(int threads, size_t n, const Fn& fn) {
  const size_t workers = WorkerCount(threads, n);
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(size_t{0}, i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&](size_t worker) {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      fn(worker, i);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
}

template <typename Fn>
void ParallelFor(int threads, size_t n, const Fn& fn) {
  ParallelForWorkers(threads, n, [&fn](size_t, size_t i) { fn(i); });
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_PARALLEL_H_
