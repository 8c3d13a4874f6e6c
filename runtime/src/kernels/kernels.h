#ifndef PODSCOPE_RUNTIME_SRC_KERNELS_KERNELS_H_
#define PODSCOPE_RUNTIME_SRC_KERNELS_KERNELS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/ir/shape.h"

namespace podscope::runtime::internal {

class IntraOpPool;

// One non-fused op over dense row-major arrays. The output never aliases an
// input. Elementwise ops run through the fused kernel instead.
struct KernelArgs {
  const Node& node;
  absl::Span<const Shape* const> input_shapes;
  absl::Span<const void* const> inputs;
  void* output;
  const IntraOpPool& pool;
};

absl::Status RunKernel(const KernelArgs& args);

// Per-family entry points (kernels/*.cc).
absl::Status RunDataMovement(const KernelArgs& args);
absl::Status RunReduction(const KernelArgs& args);
absl::Status RunDot(const KernelArgs& args);
absl::Status RunConv(const KernelArgs& args);
absl::Status RunPool(const KernelArgs& args);
absl::Status RunSoftmaxAndLoss(const KernelArgs& args);
absl::Status RunDropout(const KernelArgs& args);
// all_reduce: through the communicator registered under the op's id
// (src/collectives/all_reduce_kernel.cc).
absl::Status RunAllReduce(const KernelArgs& args);

// Whether dropout keeps element `index` of the mask drawn from (seed,
// salt) at `rate`: the same answer on every run and for any tiling.
bool DropoutKeeps(int32_t seed, int64_t salt, float rate, int64_t index);

// Splits `dims` around `axis` into (outer, axis length, inner) counts.
struct AxisSplit {
  int64_t outer = 1;
  int64_t length = 1;
  int64_t inner = 1;
};
AxisSplit SplitAtAxis(const std::vector<int64_t>& dims, int64_t axis);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_KERNELS_KERNELS_H_
