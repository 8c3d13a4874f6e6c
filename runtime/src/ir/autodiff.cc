#include "podscope/runtime/ir/autodiff.h"

#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::runtime {
namespace {

std::vector<int64_t> Iota(int n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// (operand index, gradient contribution) pairs.
using Grads = std::vector<std::pair<int, Value>>;

// Records the gradient rules of one node into the builder.
class Rules {
 public:
  explicit Rules(GraphBuilder& b) : b_(b) {}

  // Broadcasts a value that has the dimensions of `dims` with some of them
  // reduced to 1 (or a scalar) back to `dims`.
  Value Expand(Value v, const std::vector<int64_t>& dims) {
    const Shape s = b_.shape(v);
    if (s.dims() == dims) return v;
    if (s.rank() == 0) return b_.Broadcast(v, dims, {});
    return b_.Broadcast(v, dims, Iota(s.rank()));
  }

  // Reinserts reduced axes as size-1 dimensions.
  Value KeepDims(Value v, const std::vector<int64_t>& in_dims,
                 const std::vector<int64_t>& axes, bool already_kept) {
    if (already_kept) return v;
    std::vector<int64_t> dims = in_dims;
    for (int64_t axis : axes) dims[axis] = 1;
    return b_.Reshape(v, dims);
  }

  Value Scale(Value v, float factor) {
    return b_.Mul(v, b_.Full(b_.shape(v), factor));
  }

  // Gradient contributions (operand index, gradient) of node `y` given its
  // adjoint `g`, or an error for an op without a gradient rule.
  absl::StatusOr<Grads> Apply(const Node& node, Value y, Value g) {
    switch (node.op) {
      case OpKind::kParameter:
      case OpKind::kConstant:
      case OpKind::kCompare:
      case OpKind::kArgMax:
      case OpKind::kOneHot:
        return Grads{};
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kMul:
      case OpKind::kDiv:
      case OpKind::kMax:
      case OpKind::kNeg:
      case OpKind::kExp:
      case OpKind::kLog:
      case OpKind::kTanh:
      case OpKind::kRelu:
      case OpKind::kSelect:
      case OpKind::kConvert:
        return Elementwise(node, y, g);
      case OpKind::kBroadcast:
      case OpKind::kReshape:
      case OpKind::kTranspose:
      case OpKind::kSlice:
      case OpKind::kPad:
      case OpKind::kConcat:
        return DataMovement(node, g);
      case OpKind::kReduceSum:
      case OpKind::kReduceMean:
      case OpKind::kReduceMax:
        return Reduction(node, y, g);
      case OpKind::kDot:
      case OpKind::kConv2D:
      case OpKind::kMaxPool2D:
        return Contraction(node, g);
      case OpKind::kSoftmax:
      case OpKind::kLogSoftmax:
      case OpKind::kNllLoss:
      case OpKind::kCrossEntropyLoss:
        return SoftmaxAndLoss(node, y, g);
      case OpKind::kAllReduce:
        // y = reduce over ranks of x: for sum (and mean) every rank's x
        // reaches every rank's y, so the adjoint is the same all-reduce of
        // the adjoints.
        if (node.attrs.axis == static_cast<int64_t>(ReduceOp::kSum) ||
            node.attrs.axis == static_cast<int64_t>(ReduceOp::kMean)) {
          return Grads{
              {0, b_.AllReduce(g, node.attrs.salt,
                               static_cast<ReduceOp>(node.attrs.axis))}};
        }
        return absl::UnimplementedError(
            "Grad: no gradient for all_reduce max or min");
      case OpKind::kDropout:
        // The same mask (seed, salt) applied to the adjoint; no gradient
        // reaches the integer seed.
        return Grads{{0, b_.Dropout(g, Operand(node, 1), node.attrs.rate,
                                    node.attrs.salt)}};
      case OpKind::kConv2DBackpropInput:
      case OpKind::kConv2DBackpropFilter:
      case OpKind::kMaxPool2DGrad:
        return absl::UnimplementedError(
            absl::StrCat("Grad: no gradient for ", OpName(node.op),
                         " (second-order gradients are not supported)"));
    }
    return NoGradient(node);
  }

 private:
  static Value Operand(const Node& node, int i) {
    return Value{node.operands[i]};
  }

  static absl::Status NoGradient(const Node& node) {
    return absl::UnimplementedError(
        absl::StrCat("Grad: no gradient for ", OpName(node.op)));
  }

  // The arithmetic ops, one element at a time.
  absl::StatusOr<Grads> Elementwise(const Node& node, Value y, Value g) {
    auto x = [&](int i) { return Operand(node, i); };
    switch (node.op) {
      case OpKind::kAdd:
        return Grads{{0, g}, {1, g}};
      case OpKind::kSub:
        return Grads{{0, g}, {1, b_.Neg(g)}};
      case OpKind::kMul:
        return Grads{{0, b_.Mul(g, x(1))}, {1, b_.Mul(g, x(0))}};
      case OpKind::kDiv:
        return Grads{{0, b_.Div(g, x(1))},
                     {1, b_.Neg(b_.Div(b_.Mul(g, y), x(1)))}};
      case OpKind::kMax: {
        // Ties send the gradient to the first operand.
        Value first = b_.Compare(x(0), x(1), CompareDirection::kGe);
        Value z = b_.ZerosLike(g);
        return Grads{{0, b_.Select(first, g, z)}, {1, b_.Select(first, z, g)}};
      }
      case OpKind::kNeg:
        return Grads{{0, b_.Neg(g)}};
      case OpKind::kExp:
        return Grads{{0, b_.Mul(g, y)}};
      case OpKind::kLog:
        return Grads{{0, b_.Div(g, x(0))}};
      case OpKind::kTanh: {
        Value one = b_.Full(node.shape, 1.0f);
        return Grads{{0, b_.Mul(g, b_.Sub(one, b_.Mul(y, y)))}};
      }
      case OpKind::kRelu: {
        Value z = b_.ZerosLike(g);
        return Grads{
            {0, b_.Select(b_.Compare(x(0), z, CompareDirection::kGt), g, z)}};
      }
      case OpKind::kSelect: {
        Value z = b_.ZerosLike(g);
        return Grads{{1, b_.Select(x(0), g, z)}, {2, b_.Select(x(0), z, g)}};
      }
      case OpKind::kConvert:
        if (b_.shape(x(0)).element_type() != ElementType::kF32) return Grads{};
        return Grads{{0, g}};
      default:
        return NoGradient(node);
    }
  }

  // Broadcast, reshape, transpose, slice, pad and concat: the adjoint moved
  // back to where each element came from (summed where it was repeated).
  absl::StatusOr<Grads> DataMovement(const Node& node, Value g) {
    const Value x0 = Operand(node, 0);
    const OpAttrs& a = node.attrs;
    switch (node.op) {
      case OpKind::kBroadcast: {
        const Shape in = b_.shape(x0);
        std::vector<int64_t> sum_axes;
        std::vector<bool> mapped(node.shape.rank(), false);
        for (int i = 0; i < in.rank(); ++i) {
          mapped[a.axes[i]] = true;
          if (in.dim(i) == 1 && node.shape.dim(a.axes[i]) != 1) {
            sum_axes.push_back(a.axes[i]);
          }
        }
        for (int j = 0; j < node.shape.rank(); ++j) {
          if (!mapped[j]) sum_axes.push_back(j);
        }
        Value r = sum_axes.empty() ? g : b_.ReduceSum(g, sum_axes);
        if (b_.shape(r).dims() != in.dims()) r = b_.Reshape(r, in.dims());
        return Grads{{0, r}};
      }
      case OpKind::kReshape:
        return Grads{{0, b_.Reshape(g, b_.shape(x0).dims())}};
      case OpKind::kTranspose: {
        std::vector<int64_t> inverse(a.axes.size());
        for (size_t j = 0; j < a.axes.size(); ++j) inverse[a.axes[j]] = j;
        return Grads{{0, b_.Transpose(g, inverse)}};
      }
      case OpKind::kSlice: {
        const std::vector<int64_t> dims = b_.shape(x0).dims();
        std::vector<int64_t> high(dims.size());
        for (size_t i = 0; i < dims.size(); ++i)
          high[i] = dims[i] - a.limits[i];
        return Grads{{0, b_.Pad(g, a.starts, high)}};
      }
      case OpKind::kPad: {
        std::vector<int64_t> limits = a.starts;
        const std::vector<int64_t> dims = b_.shape(x0).dims();
        for (size_t i = 0; i < dims.size(); ++i) limits[i] += dims[i];
        return Grads{{0, b_.Slice(g, a.starts, limits)}};
      }
      case OpKind::kConcat: {
        Grads grads;
        int64_t offset = 0;
        for (size_t i = 0; i < node.operands.size(); ++i) {
          const std::vector<int64_t> dims = b_.shape(Operand(node, i)).dims();
          std::vector<int64_t> starts(dims.size(), 0);
          std::vector<int64_t> limits = node.shape.dims();
          starts[a.axis] = offset;
          limits[a.axis] = offset + dims[a.axis];
          offset += dims[a.axis];
          grads.push_back({static_cast<int>(i), b_.Slice(g, starts, limits)});
        }
        return grads;
      }
      default:
        return NoGradient(node);
    }
  }

  // Sum and mean spread the adjoint over the reduced axes; max gives it to
  // the maxima.
  absl::StatusOr<Grads> Reduction(const Node& node, Value y, Value g) {
    const Value x0 = Operand(node, 0);
    const OpAttrs& a = node.attrs;
    const std::vector<int64_t> dims = b_.shape(x0).dims();
    if (node.op == OpKind::kReduceMax) {
      // The gradient is shared equally among tied maxima.
      Value y_full = Expand(KeepDims(y, dims, a.axes, a.keep_dims), dims);
      Value mask = b_.Convert(b_.Compare(x0, y_full, CompareDirection::kEq),
                              ElementType::kF32);
      Value count = Expand(b_.ReduceSum(mask, a.axes, true), dims);
      Value g_full = Expand(KeepDims(g, dims, a.axes, a.keep_dims), dims);
      return Grads{{0, b_.Div(b_.Mul(g_full, mask), count)}};
    }
    Value r = Expand(KeepDims(g, dims, a.axes, a.keep_dims), dims);
    if (node.op == OpKind::kReduceMean) {
      int64_t count = 1;
      for (int64_t axis : a.axes) count *= dims[axis];
      r = Scale(r, 1.0f / static_cast<float>(count == 0 ? 1 : count));
    }
    return Grads{{0, r}};
  }

  // Dot, convolution and pooling: their backward ops.
  absl::StatusOr<Grads> Contraction(const Node& node, Value g) {
    auto x = [&](int i) { return Operand(node, i); };
    const OpAttrs& a = node.attrs;
    switch (node.op) {
      case OpKind::kDot: {
        const std::vector<int64_t> swap = node.shape.rank() == 3
                                              ? std::vector<int64_t>{0, 2, 1}
                                              : std::vector<int64_t>{1, 0};
        return Grads{{0, b_.Dot(g, b_.Transpose(x(1), swap))},
                     {1, b_.Dot(b_.Transpose(x(0), swap), g)}};
      }
      case OpKind::kConv2D:
        return Grads{{0, b_.Conv2DBackpropInput(g, x(1), b_.shape(x(0)),
                                                a.stride, a.padding)},
                     {1, b_.Conv2DBackpropFilter(x(0), g, b_.shape(x(1)),
                                                 a.stride, a.padding)}};
      case OpKind::kMaxPool2D:
        return Grads{
            {0, b_.MaxPool2DGrad(x(0), g, a.window, a.stride, a.padding)}};
      default:
        return NoGradient(node);
    }
  }

  // Softmax, log-softmax and the losses over class scores.
  absl::StatusOr<Grads> SoftmaxAndLoss(const Node& node, Value y, Value g) {
    auto x = [&](int i) { return Operand(node, i); };
    const OpAttrs& a = node.attrs;
    switch (node.op) {
      case OpKind::kSoftmax: {
        Value s = b_.ReduceSum(b_.Mul(g, y), {a.axis}, true);
        return Grads{{0, b_.Mul(y, b_.Sub(g, Expand(s, node.shape.dims())))}};
      }
      case OpKind::kLogSoftmax: {
        Value s = Expand(b_.ReduceSum(g, {a.axis}, true), node.shape.dims());
        return Grads{{0, b_.Sub(g, b_.Mul(b_.Exp(y), s))}};
      }
      case OpKind::kNllLoss:
      case OpKind::kCrossEntropyLoss: {
        const std::vector<int64_t> dims = b_.shape(x(0)).dims();
        const float inv_rows = dims[0] == 0 ? 0.0f : 1.0f / dims[0];
        Value one_hot = b_.OneHot(x(1), dims[1]);
        Value scale = Expand(Scale(g, inv_rows), dims);
        if (node.op == OpKind::kNllLoss) {
          return Grads{{0, b_.Neg(b_.Mul(one_hot, scale))}};
        }
        Value probs = b_.Softmax(x(0), 1);
        return Grads{{0, b_.Mul(b_.Sub(probs, one_hot), scale)}};
      }
      default:
        return NoGradient(node);
    }
  }

  GraphBuilder& b_;
};

}  // namespace

absl::StatusOr<std::vector<Value>> Grad(GraphBuilder& builder, Value loss,
                                        absl::Span<const Value> wrt) {
  PODSCOPE_RETURN_IF_ERROR(builder.status());
  if (!builder.Contains(loss)) {
    return absl::InvalidArgumentError("Grad: loss is not a value of the graph");
  }
  if (builder.shape(loss) != F32Shape({})) {
    return absl::InvalidArgumentError(
        absl::StrCat("Grad: loss must be an f32 scalar, got ",
                     builder.shape(loss).ToString()));
  }
  for (Value v : wrt) {
    if (!builder.Contains(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Grad: wrt value %", v.id, " is not in the graph"));
    }
  }
  const int count = loss.id + 1;  // later nodes cannot affect the loss
  // Gradients flow only along paths from a wrt value to the loss.
  std::vector<bool> from_wrt(count, false);
  for (Value v : wrt) {
    if (v.id < count) from_wrt[v.id] = true;
  }
  for (int id = 0; id < count; ++id) {
    for (int operand : builder.node(Value{id}).operands) {
      if (from_wrt[operand]) from_wrt[id] = true;
    }
  }
  std::vector<Value> adjoint(count);
  adjoint[loss.id] = builder.ScalarF32(1.0f);
  Rules rules(builder);
  for (int id = loss.id; id >= 0; --id) {
    if (!adjoint[id].valid() || !from_wrt[id]) continue;
    // Copied: recording gradient nodes may reallocate the node list.
    const Node node = builder.node(Value{id});
    if (node.shape.element_type() != ElementType::kF32) continue;
    PODSCOPE_ASSIGN_OR_RETURN(auto grads,
                              rules.Apply(node, Value{id}, adjoint[id]));
    for (const auto& [index, grad] : grads) {
      const int operand = node.operands[index];
      if (!from_wrt[operand]) continue;
      adjoint[operand] =
          adjoint[operand].valid() ? builder.Add(adjoint[operand], grad) : grad;
    }
    PODSCOPE_RETURN_IF_ERROR(builder.status());
  }
  std::vector<Value> result;
  for (Value v : wrt) {
    result.push_back(v.id < count && adjoint[v.id].valid()
                         ? adjoint[v.id]
                         : builder.ZerosLike(v));
  }
  PODSCOPE_RETURN_IF_ERROR(builder.status());
  return result;
}

}  // namespace podscope::runtime
