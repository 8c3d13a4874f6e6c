// Softmax, log-softmax, one-hot and the classification losses. Losses are
// means over the batch; labels outside [0, classes) are runtime errors.

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/kernels.h"
#include "podscope/base/status_macros.h"

namespace podscope::runtime::internal {
namespace {

void SoftmaxKernel(const float* x, float* y, const AxisSplit& s, bool log) {
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const float* in = x + o * s.length * s.inner + i;
      float* out = y + o * s.length * s.inner + i;
      float max = in[0];
      for (int64_t k = 1; k < s.length; ++k) {
        max = std::max(max, in[k * s.inner]);
      }
      double sum = 0;
      for (int64_t k = 0; k < s.length; ++k) {
        sum += std::exp(in[k * s.inner] - max);
      }
      if (log) {
        const float log_sum = static_cast<float>(std::log(sum));
        for (int64_t k = 0; k < s.length; ++k) {
          out[k * s.inner] = in[k * s.inner] - max - log_sum;
        }
      } else {
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t k = 0; k < s.length; ++k) {
          out[k * s.inner] = std::exp(in[k * s.inner] - max) * inv;
        }
      }
    }
  }
}

absl::Status CheckLabel(const Node& node, int32_t label, int64_t row,
                        int64_t classes) {
  if (label < 0 || label >= classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        OpName(node.op), ": label ", label, " at row ", row, " is outside [0, ",
        classes, ")", node.scope.empty() ? "" : " in scope ", node.scope));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSoftmaxAndLoss(const KernelArgs& args) {
  const Node& node = args.node;
  const Shape& x_shape = *args.input_shapes[0];
  switch (node.op) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      SoftmaxKernel(static_cast<const float*>(args.inputs[0]),
                    static_cast<float*>(args.output),
                    SplitAtAxis(x_shape.dims(), node.attrs.axis),
                    node.op == OpKind::kLogSoftmax);
      return absl::OkStatus();
    case OpKind::kOneHot: {
      const int32_t* labels = static_cast<const int32_t*>(args.inputs[0]);
      float* out = static_cast<float*>(args.output);
      const int64_t classes = node.attrs.axis;
      const int64_t n = x_shape.num_elements();
      std::fill(out, out + n * classes, 0.0f);
      // An out-of-range label gives an all-zero row, as tf.one_hot does.
      for (int64_t i = 0; i < n; ++i) {
        if (labels[i] >= 0 && labels[i] < classes) {
          out[i * classes + labels[i]] = 1.0f;
        }
      }
      return absl::OkStatus();
    }
    case OpKind::kNllLoss:
    case OpKind::kCrossEntropyLoss: {
      const float* scores = static_cast<const float*>(args.inputs[0]);
      const int32_t* labels = static_cast<const int32_t*>(args.inputs[1]);
      const int64_t rows = x_shape.dim(0);
      const int64_t classes = x_shape.dim(1);
      double total = 0;
      for (int64_t r = 0; r < rows; ++r) {
        PODSCOPE_RETURN_IF_ERROR(CheckLabel(node, labels[r], r, classes));
        const float* row = scores + r * classes;
        if (node.op == OpKind::kNllLoss) {
          total -= row[labels[r]];
        } else {
          const float max = *std::max_element(row, row + classes);
          double sum = 0;
          for (int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - max);
          total += std::log(sum) + max - row[labels[r]];
        }
      }
      *static_cast<float*>(args.output) =
          rows == 0 ? 0.0f : static_cast<float>(total / rows);
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("not a softmax or loss op");
  }
}

}  // namespace podscope::runtime::internal
