// Matrix products with Eigen tensor contractions; large products use every
// core through the intra-op pool.

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

// Below this many multiply-adds a product is cheaper on one thread than the
// cost of waking the pool.
constexpr int64_t kParallelMacs = 1 << 17;

using ConstMatrix =
    Eigen::TensorMap<Eigen::Tensor<const float, 2, Eigen::RowMajor>>;
using Matrix = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;

void Product(const float* a, const float* b, float* c, int64_t m, int64_t k,
             int64_t n, const Eigen::ThreadPoolDevice* device) {
  const Eigen::array<Eigen::IndexPair<int>, 1> dims = {
      Eigen::IndexPair<int>(1, 0)};
  ConstMatrix lhs(a, m, k);
  ConstMatrix rhs(b, k, n);
  Matrix out(c, m, n);
  if (device != nullptr) {
    out.device(*device) = lhs.contract(rhs, dims);
  } else {
    out = lhs.contract(rhs, dims);
  }
}

}  // namespace

absl::Status RunDot(const KernelArgs& args) {
  const Shape& a = *args.input_shapes[0];
  const Shape& b = *args.input_shapes[1];
  const float* lhs = static_cast<const float*>(args.inputs[0]);
  const float* rhs = static_cast<const float*>(args.inputs[1]);
  float* out = static_cast<float*>(args.output);
  const bool batched = a.rank() == 3;
  const int64_t batch = batched ? a.dim(0) : 1;
  const int64_t m = a.dim(batched ? 1 : 0);
  const int64_t k = a.dim(batched ? 2 : 1);
  const int64_t n = b.dim(batched ? 2 : 1);
  const int64_t macs = m * k * n;
  if (macs >= kParallelMacs || batch == 1) {
    const Eigen::ThreadPoolDevice* device =
        macs >= kParallelMacs ? &args.pool.device() : nullptr;
    for (int64_t i = 0; i < batch; ++i) {
      Product(lhs + i * m * k, rhs + i * k * n, out + i * m * n, m, k, n,
              device);
    }
    return absl::OkStatus();
  }
  // Many small products: one thread per group of batch entries.
  const int64_t min_batches = std::max<int64_t>(1, kParallelMacs / (macs + 1));
  args.pool.ParallelFor(batch, min_batches, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Product(lhs + i * m * k, rhs + i * k * n, out + i * m * n, m, k, n,
              nullptr);
    }
  });
  return absl::OkStatus();
}

}  // namespace podscope::runtime::internal
