#include "parallel.h"

#include <algorithm>

namespace podscope::runtime::internal {

IntraOpPool::IntraOpPool(int num_threads)
    : num_threads_(std::max(1, num_threads)),
      pool_(std::make_unique<Eigen::ThreadPool>(num_threads_)),
      device_(std::make_unique<Eigen::ThreadPoolDevice>(pool_.get(),
                                                        num_threads_)) {}

IntraOpPool::~IntraOpPool() = default;

void IntraOpPool::ParallelFor(
    int64_t n, int64_t min_chunk,
    const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t shards =
      std::min<int64_t>(num_threads_, (n + min_chunk - 1) / min_chunk);
  if (shards <= 1) {
    fn(0, n);
    return;
  }
  const int64_t chunk = (n + shards - 1) / shards;
  Eigen::Barrier barrier(static_cast<unsigned>(shards - 1));
  for (int64_t s = 1; s < shards; ++s) {
    const int64_t begin = s * chunk;
    const int64_t end = std::min(n, begin + chunk);
    pool_->Schedule([&fn, &barrier, begin, end] {
      if (begin < end) fn(begin, end);
      barrier.Notify();
    });
  }
  fn(0, std::min(n, chunk));
  barrier.Wait();
}

}  // namespace podscope::runtime::internal
