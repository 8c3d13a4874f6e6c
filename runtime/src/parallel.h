#ifndef PODSCOPE_RUNTIME_SRC_PARALLEL_H_
#define PODSCOPE_RUNTIME_SRC_PARALLEL_H_

#define EIGEN_USE_THREADS
#include <cstdint>
#include <functional>
#include <memory>

#include "unsupported/Eigen/CXX11/Tensor"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace podscope::runtime::internal {

// The threads kernels split large work across, shared by all devices of a
// client (the devices of one process share the machine's cores).
class IntraOpPool {
 public:
  explicit IntraOpPool(int num_threads);
  ~IntraOpPool();

  int num_threads() const { return num_threads_; }
  const Eigen::ThreadPoolDevice& device() const { return *device_; }

  // Runs fn over contiguous ranges covering [0, n), each at least
  // `min_chunk` long (except possibly the last), on up to num_threads()
  // threads including the caller. Returns when all ranges are done.
  void ParallelFor(int64_t n, int64_t min_chunk,
                   const std::function<void(int64_t, int64_t)>& fn) const;

 private:
  int num_threads_;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  std::unique_ptr<Eigen::ThreadPoolDevice> device_;
};

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_PARALLEL_H_
