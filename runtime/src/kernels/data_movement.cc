// Broadcast, reshape, transpose, slice, pad and concat as strided copies.

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "parallel.h"

namespace podscope::runtime::internal {
namespace {

// Below this many elements a copy runs on the calling thread.
constexpr int64_t kParallelElements = int64_t{1} << 16;

// Copies an array of `dims` from src to dst, where element i (a
// multi-index) lives at sum(i[d] * stride[d]) on each side. T only needs the
// element's width. Large copies are split by rows across the pool.
template <typename T>
void StridedCopy(const std::vector<int64_t>& dims, const T* src,
                 const std::vector<int64_t>& src_strides, T* dst,
                 const std::vector<int64_t>& dst_strides,
                 const IntraOpPool& pool) {
  const int rank = static_cast<int>(dims.size());
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  if (rank == 0) {
    *dst = *src;
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t src_step = src_strides[rank - 1];
  const int64_t dst_step = dst_strides[rank - 1];
  const int64_t rows = n / inner;
  auto copy_rows = [&](int64_t first, int64_t last) {
    // The multi-index of row `first` over all but the innermost dimension.
    std::vector<int64_t> index(rank, 0);
    int64_t src_offset = 0;
    int64_t dst_offset = 0;
    int64_t rest = first;
    for (int axis = rank - 2; axis >= 0; --axis) {
      index[axis] = rest % dims[axis];
      rest /= dims[axis];
      src_offset += index[axis] * src_strides[axis];
      dst_offset += index[axis] * dst_strides[axis];
    }
    for (int64_t row = first; row < last; ++row) {
      const T* s = src + src_offset;
      T* d = dst + dst_offset;
      if (src_step == 1 && dst_step == 1) {
        std::memcpy(d, s, inner * sizeof(T));
      } else if (src_step == 0 && dst_step == 1) {
        std::fill(d, d + inner, *s);  // a broadcast row
      } else {
        for (int64_t j = 0; j < inner; ++j) d[j * dst_step] = s[j * src_step];
      }
      // Advance the multi-index over all but the innermost dimension.
      for (int axis = rank - 2; axis >= 0; --axis) {
        src_offset += src_strides[axis];
        dst_offset += dst_strides[axis];
        if (++index[axis] < dims[axis]) break;
        src_offset -= src_strides[axis] * dims[axis];
        dst_offset -= dst_strides[axis] * dims[axis];
        index[axis] = 0;
      }
    }
  };
  if (n < kParallelElements) {
    copy_rows(0, rows);
    return;
  }
  pool.ParallelFor(rows, std::max<int64_t>(1, kParallelElements / 4 / inner),
                   copy_rows);
}

template <typename T>
absl::Status Run(const KernelArgs& args) {
  const Node& node = args.node;
  const Shape& in = *args.input_shapes[0];
  const Shape& out = node.shape;
  const T* src = static_cast<const T*>(args.inputs[0]);
  T* dst = static_cast<T*>(args.output);
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dims());
  const std::vector<int64_t> out_strides = RowMajorStrides(out.dims());
  switch (node.op) {
    case OpKind::kReshape:
      std::memcpy(dst, src, out.num_elements() * sizeof(T));
      return absl::OkStatus();
    case OpKind::kBroadcast: {
      // Output dimensions not fed by the operand, or fed by a size-1
      // dimension, read the same element again: stride 0.
      std::vector<int64_t> strides(out.rank(), 0);
      for (int i = 0; i < in.rank(); ++i) {
        if (in.dim(i) != 1) strides[node.attrs.axes[i]] = in_strides[i];
      }
      StridedCopy(out.dims(), src, strides, dst, out_strides, args.pool);
      return absl::OkStatus();
    }
    case OpKind::kTranspose: {
      std::vector<int64_t> strides(out.rank());
      for (int j = 0; j < out.rank(); ++j) {
        strides[j] = in_strides[node.attrs.axes[j]];
      }
      StridedCopy(out.dims(), src, strides, dst, out_strides, args.pool);
      return absl::OkStatus();
    }
    case OpKind::kSlice: {
      int64_t offset = 0;
      for (int i = 0; i < in.rank(); ++i) {
        offset += node.attrs.starts[i] * in_strides[i];
      }
      StridedCopy(out.dims(), src + offset, in_strides, dst, out_strides,
                  args.pool);
      return absl::OkStatus();
    }
    case OpKind::kPad: {
      std::memset(dst, 0, out.num_elements() * sizeof(T));
      int64_t offset = 0;
      for (int i = 0; i < out.rank(); ++i) {
        offset += node.attrs.starts[i] * out_strides[i];
      }
      StridedCopy(in.dims(), src, in_strides, dst + offset, out_strides,
                  args.pool);
      return absl::OkStatus();
    }
    case OpKind::kConcat: {
      int64_t offset = 0;
      for (size_t k = 0; k < args.inputs.size(); ++k) {
        const Shape& part = *args.input_shapes[k];
        StridedCopy(part.dims(), static_cast<const T*>(args.inputs[k]),
                    RowMajorStrides(part.dims()), dst + offset, out_strides,
                    args.pool);
        offset += part.dim(node.attrs.axis) * out_strides[node.attrs.axis];
      }
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("not a data movement op");
  }
}

}  // namespace

absl::Status RunDataMovement(const KernelArgs& args) {
  if (ElementSize(args.node.shape.element_type()) == 1) {
    return Run<uint8_t>(args);
  }
  return Run<uint32_t>(args);
}

}  // namespace podscope::runtime::internal
