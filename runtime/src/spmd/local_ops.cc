// One op of a device program over local shards: the global op recorded
// with local shapes (see plan.h), plus the rescaling a partial mean or NLL
// loss needs.

#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "spmd/plan.h"

namespace podscope::runtime::spmd {
namespace {

// Each Record* below records the ops of one family and returns nullopt for
// an op of another family.

// Constants and the ops that work element by element (dropout among them).
std::optional<Value> RecordElementwise(GraphBuilder& g, const Node& node,
                                       const std::vector<Value>& x) {
  const OpAttrs& a = node.attrs;
  switch (node.op) {
    case OpKind::kConstant:
      return g.Constant(*a.literal);
    case OpKind::kAdd:
      return g.Add(x[0], x[1]);
    case OpKind::kSub:
      return g.Sub(x[0], x[1]);
    case OpKind::kMul:
      return g.Mul(x[0], x[1]);
    case OpKind::kDiv:
      return g.Div(x[0], x[1]);
    case OpKind::kMax:
      return g.Max(x[0], x[1]);
    case OpKind::kNeg:
      return g.Neg(x[0]);
    case OpKind::kExp:
      return g.Exp(x[0]);
    case OpKind::kLog:
      return g.Log(x[0]);
    case OpKind::kTanh:
      return g.Tanh(x[0]);
    case OpKind::kRelu:
      return g.Relu(x[0]);
    case OpKind::kCompare:
      return g.Compare(x[0], x[1], a.direction);
    case OpKind::kSelect:
      return g.Select(x[0], x[1], x[2]);
    case OpKind::kConvert:
      return g.Convert(x[0], a.element_type);
    case OpKind::kDropout:
      return g.Dropout(x[0], x[1], a.rate, a.salt);
    default:
      return std::nullopt;
  }
}

// Ops that move elements; those given a result shape get the local one.
std::optional<Value> RecordDataMovement(GraphBuilder& g, const Node& node,
                                        const std::vector<Value>& x,
                                        const Shape& local_out) {
  const OpAttrs& a = node.attrs;
  switch (node.op) {
    case OpKind::kBroadcast:
      return g.Broadcast(x[0], local_out.dims(), a.axes);
    case OpKind::kReshape:
      return g.Reshape(x[0], local_out.dims());
    case OpKind::kTranspose:
      return g.Transpose(x[0], a.axes);
    case OpKind::kSlice:
      return g.Slice(x[0], a.starts, a.limits);
    case OpKind::kPad:
      return g.Pad(x[0], a.starts, a.limits);
    case OpKind::kConcat:
      return g.Concat(x, a.axis);
    default:
      return std::nullopt;
  }
}

// Reductions within a shard (a partial mean divides the local sum by the
// global count) and across ranks (all_reduce).
std::optional<Value> RecordReduction(GraphBuilder& g, const Node& node,
                                     const std::vector<Value>& x,
                                     const std::vector<Shape>& global,
                                     const Shape& local_out, bool partial) {
  const OpAttrs& a = node.attrs;
  switch (node.op) {
    case OpKind::kReduceSum:
      return g.ReduceSum(x[0], a.axes, a.keep_dims);
    case OpKind::kReduceMax:
      return g.ReduceMax(x[0], a.axes, a.keep_dims);
    case OpKind::kReduceMean: {
      if (!partial) return g.ReduceMean(x[0], a.axes, a.keep_dims);
      const Shape& in = global[0];
      int64_t count = 1;
      for (int64_t ax : a.axes) count *= in.dim(ax < 0 ? ax + in.rank() : ax);
      return g.Mul(g.ReduceSum(x[0], a.axes, a.keep_dims),
                   g.Full(local_out, 1.0f / static_cast<float>(count)));
    }
    case OpKind::kArgMax:
      return g.ArgMax(x[0], a.axis, a.keep_dims);
    case OpKind::kAllReduce:
      return g.AllReduce(x[0], a.salt, static_cast<ReduceOp>(a.axis));
    default:
      return std::nullopt;
  }
}

// Dot, convolutions and pooling; the backprop ops get the local shape of
// what they compute.
std::optional<Value> RecordContraction(GraphBuilder& g, const Node& node,
                                       const std::vector<Value>& x,
                                       const Shape& local_out) {
  const OpAttrs& a = node.attrs;
  switch (node.op) {
    case OpKind::kDot:
      return g.Dot(x[0], x[1]);
    case OpKind::kConv2D:
      return g.Conv2D(x[0], x[1], a.stride, a.padding);
    case OpKind::kConv2DBackpropInput:
      return g.Conv2DBackpropInput(x[0], x[1], local_out, a.stride, a.padding);
    case OpKind::kConv2DBackpropFilter:
      return g.Conv2DBackpropFilter(x[0], x[1], local_out, a.stride, a.padding);
    case OpKind::kMaxPool2D:
      return g.MaxPool2D(x[0], a.window, a.stride, a.padding);
    case OpKind::kMaxPool2DGrad:
      return g.MaxPool2DGrad(x[0], x[1], a.window, a.stride, a.padding);
    default:
      return std::nullopt;
  }
}

// Softmax, one-hot and the losses; a partial NLL loss is rescaled to this
// device's share of the global mean.
std::optional<Value> RecordSoftmaxAndLoss(GraphBuilder& g, const Node& node,
                                          const std::vector<Value>& x,
                                          const std::vector<Shape>& global,
                                          bool partial) {
  const OpAttrs& a = node.attrs;
  switch (node.op) {
    case OpKind::kSoftmax:
      return g.Softmax(x[0], a.axis);
    case OpKind::kLogSoftmax:
      return g.LogSoftmax(x[0], a.axis);
    case OpKind::kOneHot:
      return g.OneHot(x[0], a.axis);
    case OpKind::kNllLoss: {
      Value v = g.NllLoss(x[0], x[1]);
      if (!partial) return v;
      // The kernel means over the local (padded) rows; padded rows are
      // zero, so rescaling gives this device's share of the global mean.
      const int64_t rows = g.shape(x[0]).dim(0);
      const int64_t total = global[0].dim(0);
      return g.Mul(
          v, g.ScalarF32(static_cast<float>(rows) / static_cast<float>(total)));
    }
    case OpKind::kCrossEntropyLoss:
      return g.CrossEntropyLoss(x[0], x[1]);
    default:
      return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<Value> RecordLocalOp(GraphBuilder& g, const Node& node,
                                    const std::vector<Value>& x,
                                    const std::vector<Shape>& global,
                                    const Shape& local_out, bool partial) {
  std::optional<Value> v = RecordElementwise(g, node, x);
  if (!v) v = RecordDataMovement(g, node, x, local_out);
  if (!v) v = RecordReduction(g, node, x, global, local_out, partial);
  if (!v) v = RecordContraction(g, node, x, local_out);
  if (!v) v = RecordSoftmaxAndLoss(g, node, x, global, partial);
  if (!v) {
    return absl::UnimplementedError(
        absl::StrCat("spmd: no partitioning rule for ", OpName(node.op)));
  }
  if (!v->valid()) return g.TakeStatus();
  if (g.shape(*v) != local_out) {
    return absl::InternalError(absl::StrCat(
        "spmd: ", OpName(node.op), " made ", g.shape(*v).ToString(),
        " where the plan expects ", local_out.ToString()));
  }
  return *v;
}

}  // namespace podscope::runtime::spmd
