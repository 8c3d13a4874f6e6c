// One op of a device program over local shards: the global op recorded
// with local shapes (see plan.h), plus the rescaling a partial mean or NLL
// loss needs.

#include <limits>

#include "absl/strings/str_cat.h"
#include "spmd/plan.h"

namespace podscope::runtime::spmd {

absl::StatusOr<Value> RecordLocalOp(GraphBuilder& g, const Node& node,
                                    const std::vector<Value>& x,
                                    const std::vector<Shape>& global,
                                    const Shape& local_out, bool partial) {
  const OpAttrs& a = node.attrs;
  Value v;
  switch (node.op) {
    case OpKind::kConstant:
      v = g.Constant(*a.literal);
      break;
    case OpKind::kAdd:
      v = g.Add(x[0], x[1]);
      break;
    case OpKind::kSub:
      v = g.Sub(x[0], x[1]);
      break;
    case OpKind::kMul:
      v = g.Mul(x[0], x[1]);
      break;
    case OpKind::kDiv:
      v = g.Div(x[0], x[1]);
      break;
    case OpKind::kMax:
      v = g.Max(x[0], x[1]);
      break;
    case OpKind::kNeg:
      v = g.Neg(x[0]);
      break;
    case OpKind::kExp:
      v = g.Exp(x[0]);
      break;
    case OpKind::kLog:
      v = g.Log(x[0]);
      break;
    case OpKind::kTanh:
      v = g.Tanh(x[0]);
      break;
    case OpKind::kRelu:
      v = g.Relu(x[0]);
      break;
    case OpKind::kCompare:
      v = g.Compare(x[0], x[1], a.direction);
      break;
    case OpKind::kSelect:
      v = g.Select(x[0], x[1], x[2]);
      break;
    case OpKind::kConvert:
      v = g.Convert(x[0], a.element_type);
      break;
    case OpKind::kBroadcast:
      v = g.Broadcast(x[0], local_out.dims(), a.axes);
      break;
    case OpKind::kReshape:
      v = g.Reshape(x[0], local_out.dims());
      break;
    case OpKind::kTranspose:
      v = g.Transpose(x[0], a.axes);
      break;
    case OpKind::kSlice:
      v = g.Slice(x[0], a.starts, a.limits);
      break;
    case OpKind::kPad:
      v = g.Pad(x[0], a.starts, a.limits);
      break;
    case OpKind::kConcat:
      v = g.Concat(x, a.axis);
      break;
    case OpKind::kReduceSum:
      v = g.ReduceSum(x[0], a.axes, a.keep_dims);
      break;
    case OpKind::kReduceMax:
      v = g.ReduceMax(x[0], a.axes, a.keep_dims);
      break;
    case OpKind::kReduceMean:
      if (partial) {
        // A partial mean: the local sum over the global count.
        const Shape& in = global[0];
        int64_t count = 1;
        for (int64_t ax : a.axes) count *= in.dim(ax < 0 ? ax + in.rank() : ax);
        v = g.Mul(g.ReduceSum(x[0], a.axes, a.keep_dims),
                  g.Full(local_out, 1.0f / static_cast<float>(count)));
      } else {
        v = g.ReduceMean(x[0], a.axes, a.keep_dims);
      }
      break;
    case OpKind::kArgMax:
      v = g.ArgMax(x[0], a.axis, a.keep_dims);
      break;
    case OpKind::kDot:
      v = g.Dot(x[0], x[1]);
      break;
    case OpKind::kConv2D:
      v = g.Conv2D(x[0], x[1], a.stride, a.padding);
      break;
    case OpKind::kConv2DBackpropInput:
      v = g.Conv2DBackpropInput(x[0], x[1], local_out, a.stride, a.padding);
      break;
    case OpKind::kConv2DBackpropFilter:
      v = g.Conv2DBackpropFilter(x[0], x[1], local_out, a.stride, a.padding);
      break;
    case OpKind::kMaxPool2D:
      v = g.MaxPool2D(x[0], a.window, a.stride, a.padding);
      break;
    case OpKind::kMaxPool2DGrad:
      v = g.MaxPool2DGrad(x[0], x[1], a.window, a.stride, a.padding);
      break;
    case OpKind::kSoftmax:
      v = g.Softmax(x[0], a.axis);
      break;
    case OpKind::kLogSoftmax:
      v = g.LogSoftmax(x[0], a.axis);
      break;
    case OpKind::kOneHot:
      v = g.OneHot(x[0], a.axis);
      break;
    case OpKind::kNllLoss:
      v = g.NllLoss(x[0], x[1]);
      if (partial) {
        // The kernel means over the local (padded) rows; padded rows are
        // zero, so rescaling gives this device's share of the global mean.
        const int64_t rows = g.shape(x[0]).dim(0);
        const int64_t total = global[0].dim(0);
        v = g.Mul(v, g.ScalarF32(static_cast<float>(rows) /
                                 static_cast<float>(total)));
      }
      break;
    case OpKind::kCrossEntropyLoss:
      v = g.CrossEntropyLoss(x[0], x[1]);
      break;
    case OpKind::kDropout:
      v = g.Dropout(x[0], x[1], a.rate, a.salt);
      break;
    case OpKind::kAllReduce:
      v = g.AllReduce(x[0], a.salt, static_cast<ReduceOp>(a.axis));
      break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("spmd: no partitioning rule for ", OpName(node.op)));
  }
  if (!v.valid()) return g.TakeStatus();
  if (g.shape(v) != local_out) {
    return absl::InternalError(
        absl::StrCat("spmd: ", OpName(node.op), " made ", g.shape(v).ToString(),
                     " where the plan expects ", local_out.ToString()));
  }
  return v;
}

}  // namespace podscope::runtime::spmd
