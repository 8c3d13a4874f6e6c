// Sum, max and mean over any set of axes, and argmax along one axis.

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

// Walks the input in row-major order; each element lands in the output
// element obtained by dropping the reduced axes (stride 0 there).
template <typename T, typename Acc, typename Combine>
void Reduce(const Shape& in, const std::vector<int64_t>& axes, const T* src,
            std::vector<Acc>& acc, Combine combine) {
  const int rank = in.rank();
  if (rank == 0) {
    acc[0] = combine(acc[0], static_cast<Acc>(src[0]));
    return;
  }
  std::vector<int64_t> kept_dims;
  for (int i = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      kept_dims.push_back(in.dim(i));
    }
  }
  const std::vector<int64_t> kept_strides = RowMajorStrides(kept_dims);
  std::vector<int64_t> out_strides(rank, 0);
  for (int i = 0, k = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      out_strides[i] = kept_strides[k++];
    }
  }
  const int64_t n = in.num_elements();
  if (n == 0) return;
  const int64_t inner = in.dim(rank - 1);
  const int64_t step = out_strides[rank - 1];
  std::vector<int64_t> index(rank, 0);
  int64_t out_offset = 0;
  for (int64_t row = 0; row < n / inner; ++row) {
    const T* s = src + row * inner;
    if (step == 0) {
      Acc value = acc[out_offset];
      for (int64_t j = 0; j < inner; ++j) {
        value = combine(value, static_cast<Acc>(s[j]));
      }
      acc[out_offset] = value;
    } else {
      Acc* a = acc.data() + out_offset;
      for (int64_t j = 0; j < inner; ++j) {
        a[j] = combine(a[j], static_cast<Acc>(s[j]));
      }
    }
    for (int axis = rank - 2; axis >= 0; --axis) {
      out_offset += out_strides[axis];
      if (++index[axis] < in.dim(axis)) break;
      out_offset -= out_strides[axis] * in.dim(axis);
      index[axis] = 0;
    }
  }
}

template <typename T>
absl::Status RunTyped(const KernelArgs& args) {
  const Node& node = args.node;
  const Shape& in = *args.input_shapes[0];
  const T* src = static_cast<const T*>(args.inputs[0]);
  T* dst = static_cast<T*>(args.output);
  const int64_t out_n = node.shape.num_elements();
  if (node.op == OpKind::kReduceMax) {
    std::vector<T> acc(out_n, std::numeric_limits<T>::lowest());
    Reduce<T, T>(in, node.attrs.axes, src, acc,
                 [](T a, T b) { return b > a ? b : a; });
    std::copy(acc.begin(), acc.end(), dst);
    return absl::OkStatus();
  }
  // Sums accumulate in double (or int64) so long reductions keep their
  // precision.
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  std::vector<Acc> acc(out_n, Acc(0));
  Reduce<T, Acc>(in, node.attrs.axes, src, acc,
                 [](Acc a, Acc b) { return a + b; });
  Acc count = 1;
  if (node.op == OpKind::kReduceMean) {
    const int64_t reduced = out_n == 0 ? 0 : in.num_elements() / out_n;
    count = static_cast<Acc>(reduced == 0 ? 1 : reduced);
  }
  for (int64_t i = 0; i < out_n; ++i) dst[i] = static_cast<T>(acc[i] / count);
  return absl::OkStatus();
}

absl::Status ArgMax(const KernelArgs& args) {
  const Shape& in = *args.input_shapes[0];
  const AxisSplit split = SplitAtAxis(in.dims(), args.node.attrs.axis);
  const float* src = static_cast<const float*>(args.inputs[0]);
  int32_t* dst = static_cast<int32_t*>(args.output);
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < split.inner; ++i) {
      const float* s = src + o * split.length * split.inner + i;
      int32_t best = 0;
      for (int64_t k = 1; k < split.length; ++k) {
        if (s[k * split.inner] > s[best * split.inner]) {
          best = static_cast<int32_t>(k);
        }
      }
      dst[o * split.inner + i] = best;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunReduction(const KernelArgs& args) {
  if (args.node.op == OpKind::kArgMax) return ArgMax(args);
  if (args.input_shapes[0]->element_type() == ElementType::kI32) {
    return RunTyped<int32_t>(args);
  }
  return RunTyped<float>(args);
}

}  // namespace podscope::runtime::internal
