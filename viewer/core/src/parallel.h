// Runs fn(i) for i in [0, n) on up to `threads` threads (0: all cores).
#ifndef PODSCOPE_VIEWER_SRC_PARALLEL_H_
#define PODSCOPE_VIEWER_SRC_PARALLEL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace podscope::viewer::internal {

inline int ThreadCount(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
    for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

}  // namespace podscope::viewer::internal

#endif  // PODSCOPE_VIEWER_SRC_PARALLEL_H_
