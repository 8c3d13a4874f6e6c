// Fan-out of independent work items over threads.
//
// Contract: ParallelFor(threads, n, fn) calls fn(i) exactly once for every
// i in [0, n) and returns when all calls have returned. Items are handed out
// one at a time in increasing order, so uneven items balance. It uses at
// most min(n, ThreadCount(threads)) threads, the calling thread among them;
// with one, every call runs on the calling thread, in order. fn must be
// safe to call concurrently for different i and must not throw.
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

template <typename Fn>
void ParallelFor(int threads, size_t n, const Fn& fn) {
  const size_t workers =
      std::min<size_t>(n, static_cast<size_t>(ThreadCount(threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      fn(i);
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_PARALLEL_H_
