#include "kernels/kernels.h"

#include "absl/strings/str_cat.h"

namespace podscope::runtime::internal {

AxisSplit SplitAtAxis(const std::vector<int64_t>& dims, int64_t axis) {
  AxisSplit split;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i) {
    if (i < axis) split.outer *= dims[i];
    if (i == axis) split.length = dims[i];
    if (i > axis) split.inner *= dims[i];
  }
  return split;
}

absl::Status RunKernel(const KernelArgs& args) {
  switch (args.node.op) {
    case OpKind::kBroadcast:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kPad:
    case OpKind::kConcat:
      return RunDataMovement(args);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMean:
    case OpKind::kArgMax:
      return RunReduction(args);
    case OpKind::kDot:
      return RunDot(args);
    case OpKind::kConv2D:
    case OpKind::kConv2DBackpropInput:
    case OpKind::kConv2DBackpropFilter:
      return RunConv(args);
    case OpKind::kMaxPool2D:
    case OpKind::kMaxPool2DGrad:
      return RunPool(args);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kOneHot:
    case OpKind::kNllLoss:
    case OpKind::kCrossEntropyLoss:
      return RunSoftmaxAndLoss(args);
    case OpKind::kDropout:
      return RunDropout(args);
    case OpKind::kAllReduce:
      return RunAllReduce(args);
    default:
      return absl::InternalError(
          absl::StrCat("no standalone kernel for ", OpName(args.node.op)));
  }
}

}  // namespace podscope::runtime::internal
