// Result shapes of every op, with errors that name the op and the shapes.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/ir/builder.h"

namespace podscope::runtime {
namespace {

using Operands = absl::Span<const Shape* const>;

absl::Status ShapeError(OpKind op, Operands operands, absl::string_view what) {
  std::vector<std::string> shapes;
  for (const Shape* shape : operands) shapes.push_back(shape->ToString());
  return absl::InvalidArgumentError(
      absl::StrCat(OpName(op), ": ", what,
                   " (operand shapes: ", absl::StrJoin(shapes, ", "), ")"));
}

bool IsOneOf(ElementType type, std::initializer_list<ElementType> types) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

std::string Dims(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

absl::Status CheckArity(OpKind op, Operands operands, size_t arity) {
  if (operands.size() != arity) {
    return ShapeError(
        op, operands,
        absl::StrCat("expects ", arity, " operands, got ", operands.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> InferElementwise(OpKind op, Operands operands,
                                       const OpAttrs& attrs) {
  const bool unary = op == OpKind::kNeg || op == OpKind::kExp ||
                     op == OpKind::kLog || op == OpKind::kTanh ||
                     op == OpKind::kRelu || op == OpKind::kConvert;
  const size_t arity = unary ? 1 : op == OpKind::kSelect ? 3 : 2;
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, arity));
  if (op == OpKind::kConvert) {
    return Shape(attrs.element_type, operands[0]->dims());
  }
  if (op == OpKind::kSelect) {
    if (operands[0]->element_type() != ElementType::kPred) {
      return ShapeError(op, operands, "the predicate must be pred");
    }
    if (operands[0]->dims() != operands[1]->dims() ||
        *operands[1] != *operands[2]) {
      return ShapeError(op, operands,
                        "predicate and both branches must have one shape");
    }
    return *operands[1];
  }
  for (const Shape* shape : operands) {
    if (*shape != *operands[0]) {
      return ShapeError(op, operands,
                        "operands must have the same shape and type; "
                        "broadcast explicitly");
    }
  }
  const ElementType type = operands[0]->element_type();
  if (op == OpKind::kCompare) {
    return Shape(ElementType::kPred, operands[0]->dims());
  }
  const bool float_only = op == OpKind::kDiv || op == OpKind::kExp ||
                          op == OpKind::kLog || op == OpKind::kTanh;
  if (float_only ? type != ElementType::kF32
                 : !IsOneOf(type, {ElementType::kF32, ElementType::kI32})) {
    return ShapeError(
        op, operands,
        absl::StrCat("unsupported element type ", ElementTypeName(type)));
  }
  return *operands[0];
}

absl::Status CheckAxes(OpKind op, Operands operands,
                       const std::vector<int64_t>& axes, int rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank || seen[axis]) {
      return ShapeError(op, operands,
                        absl::StrCat("invalid or repeated axis ", axis, " in ",
                                     Dims(axes), " for rank ", rank));
    }
    seen[axis] = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> InferReduce(OpKind op, Operands operands,
                                  const OpAttrs& attrs) {
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 1));
  const Shape& x = *operands[0];
  const std::vector<int64_t> axes =
      op == OpKind::kArgMax ? std::vector<int64_t>{attrs.axis} : attrs.axes;
  PODSCOPE_RETURN_IF_ERROR(CheckAxes(op, operands, axes, x.rank()));
  const bool float_only = op == OpKind::kReduceMean || op == OpKind::kArgMax;
  if (float_only ? x.element_type() != ElementType::kF32
                 : x.element_type() == ElementType::kPred) {
    return ShapeError(op, operands,
                      absl::StrCat("unsupported element type ",
                                   ElementTypeName(x.element_type())));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) {
      dims.push_back(x.dim(i));
    } else if (attrs.keep_dims) {
      dims.push_back(1);
    }
  }
  if (op == OpKind::kArgMax) return I32Shape(std::move(dims));
  return Shape(x.element_type(), std::move(dims));
}

absl::StatusOr<Shape> InferBroadcast(OpKind op, Operands operands,
                                     const OpAttrs& attrs) {
  const Shape& x = *operands[0];
  const auto& out = attrs.dims;
  const auto& map = attrs.axes;
  if (static_cast<int>(map.size()) != x.rank()) {
    return ShapeError(op, operands,
                      absl::StrCat("broadcast dimensions ", Dims(map),
                                   " must map each operand dimension"));
  }
  for (int i = 0; i < x.rank(); ++i) {
    if (map[i] < 0 || map[i] >= static_cast<int64_t>(out.size()) ||
        (i > 0 && map[i] <= map[i - 1]) ||
        (x.dim(i) != 1 && x.dim(i) != out[map[i]])) {
      return ShapeError(op, operands,
                        absl::StrCat("cannot broadcast to ", Dims(out),
                                     " with broadcast dimensions ", Dims(map)));
    }
  }
  return Shape(x.element_type(), out);
}

absl::StatusOr<Shape> InferReshape(OpKind op, Operands operands,
                                   const OpAttrs& attrs) {
  const Shape& x = *operands[0];
  int64_t n = 1;
  for (int64_t d : attrs.dims) n = d < 0 ? -1 : n * d;
  if (n != x.num_elements()) {
    return ShapeError(op, operands,
                      absl::StrCat("cannot reshape ", x.num_elements(),
                                   " elements to ", Dims(attrs.dims)));
  }
  return Shape(x.element_type(), attrs.dims);
}

absl::StatusOr<Shape> InferTranspose(OpKind op, Operands operands,
                                     const OpAttrs& attrs) {
  const Shape& x = *operands[0];
  if (static_cast<int>(attrs.axes.size()) != x.rank() ||
      !CheckAxes(op, operands, attrs.axes, x.rank()).ok()) {
    return ShapeError(op, operands,
                      absl::StrCat(Dims(attrs.axes),
                                   " is not a permutation of the "
                                   "operand's dimensions"));
  }
  std::vector<int64_t> dims;
  for (int64_t axis : attrs.axes) dims.push_back(x.dim(axis));
  return Shape(x.element_type(), std::move(dims));
}

absl::StatusOr<Shape> InferSlice(OpKind op, Operands operands,
                                 const OpAttrs& attrs) {
  const Shape& x = *operands[0];
  const auto& lo = attrs.starts;
  const auto& hi = attrs.limits;
  bool ok = static_cast<int>(lo.size()) == x.rank() &&
            static_cast<int>(hi.size()) == x.rank();
  std::vector<int64_t> dims;
  for (int i = 0; ok && i < x.rank(); ++i) {
    ok = lo[i] >= 0 && lo[i] <= hi[i] && hi[i] <= x.dim(i);
    dims.push_back(hi[i] - lo[i]);
  }
  if (!ok) {
    return ShapeError(op, operands,
                      absl::StrCat("slice ", Dims(lo), " to ", Dims(hi),
                                   " is out of bounds"));
  }
  return Shape(x.element_type(), std::move(dims));
}

absl::StatusOr<Shape> InferPad(OpKind op, Operands operands,
                               const OpAttrs& attrs) {
  const Shape& x = *operands[0];
  const auto& lo = attrs.starts;
  const auto& hi = attrs.limits;
  bool ok = static_cast<int>(lo.size()) == x.rank() &&
            static_cast<int>(hi.size()) == x.rank();
  std::vector<int64_t> dims;
  for (int i = 0; ok && i < x.rank(); ++i) {
    ok = lo[i] >= 0 && hi[i] >= 0;
    dims.push_back(x.dim(i) + lo[i] + hi[i]);
  }
  if (!ok) {
    return ShapeError(
        op, operands,
        absl::StrCat("invalid padding ", Dims(lo), " and ", Dims(hi)));
  }
  return Shape(x.element_type(), std::move(dims));
}

absl::StatusOr<Shape> InferConcat(OpKind op, Operands operands,
                                  const OpAttrs& attrs) {
  const Shape& x = *operands[0];
  if (attrs.axis < 0 || attrs.axis >= x.rank()) {
    return ShapeError(op, operands,
                      absl::StrCat("axis ", attrs.axis, " is out of range"));
  }
  std::vector<int64_t> dims = x.dims();
  dims[attrs.axis] = 0;
  for (const Shape* shape : operands) {
    bool ok =
        shape->rank() == x.rank() && shape->element_type() == x.element_type();
    for (int i = 0; ok && i < x.rank(); ++i) {
      ok = i == attrs.axis || shape->dim(i) == x.dim(i);
    }
    if (!ok) {
      return ShapeError(
          op, operands,
          absl::StrCat("operands differ outside axis ", attrs.axis));
    }
    dims[attrs.axis] += shape->dim(attrs.axis);
  }
  return Shape(x.element_type(), std::move(dims));
}

absl::StatusOr<Shape> InferDataMovement(OpKind op, Operands operands,
                                        const OpAttrs& attrs) {
  if (op != OpKind::kConcat) {
    PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 1));
  } else if (operands.empty()) {
    return ShapeError(op, operands, "needs at least one operand");
  }
  switch (op) {
    case OpKind::kBroadcast:
      return InferBroadcast(op, operands, attrs);
    case OpKind::kReshape:
      return InferReshape(op, operands, attrs);
    case OpKind::kTranspose:
      return InferTranspose(op, operands, attrs);
    case OpKind::kSlice:
      return InferSlice(op, operands, attrs);
    case OpKind::kPad:
      return InferPad(op, operands, attrs);
    case OpKind::kConcat:
      return InferConcat(op, operands, attrs);
    default:
      return ShapeError(op, operands, "not a data movement op");
  }
}

absl::StatusOr<Shape> InferDot(Operands operands) {
  const OpKind op = OpKind::kDot;
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 2));
  const Shape& a = *operands[0];
  const Shape& b = *operands[1];
  if (a.element_type() != ElementType::kF32 ||
      b.element_type() != ElementType::kF32) {
    return ShapeError(op, operands, "operands must be f32");
  }
  if (a.rank() == 2 && b.rank() == 2) {
    if (a.dim(1) != b.dim(0)) {
      return ShapeError(op, operands,
                        absl::StrCat("contracting dimensions differ: ",
                                     a.dim(1), " vs ", b.dim(0)));
    }
    return F32Shape({a.dim(0), b.dim(1)});
  }
  if (a.rank() == 3 && b.rank() == 3) {
    if (a.dim(0) != b.dim(0) || a.dim(2) != b.dim(1)) {
      return ShapeError(op, operands, "batch or contracting dimensions differ");
    }
    return F32Shape({a.dim(0), a.dim(1), b.dim(2)});
  }
  return ShapeError(op, operands,
                    "expects two rank-2 or two rank-3 (batched) operands");
}

// The NOHW result of convolving `input` dims with `weights` dims.
absl::StatusOr<std::vector<int64_t>> ConvOutput(OpKind op, Operands operands,
                                                const std::vector<int64_t>& in,
                                                const std::vector<int64_t>& w,
                                                const OpAttrs& attrs) {
  if (in.size() != 4 || w.size() != 4) {
    return ShapeError(op, operands,
                      "expects NCHW input and OIHW weights of rank 4");
  }
  if (in[1] != w[1]) {
    return ShapeError(op, operands,
                      absl::StrCat("input has ", in[1],
                                   " channels but the weights expect ", w[1]));
  }
  std::vector<int64_t> out = {in[0], w[0], 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (attrs.stride[i] <= 0 || attrs.padding[i] < 0) {
      return ShapeError(op, operands, "stride must be > 0, padding >= 0");
    }
    const int64_t span = in[2 + i] + 2 * attrs.padding[i] - w[2 + i];
    if (span < 0) {
      return ShapeError(op, operands, "kernel is larger than the padded input");
    }
    out[2 + i] = span / attrs.stride[i] + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> PoolOutput(OpKind op, Operands operands,
                                                const Shape& in,
                                                const OpAttrs& attrs) {
  if (in.rank() != 4 || in.element_type() != ElementType::kF32) {
    return ShapeError(op, operands, "expects an f32 NCHW input");
  }
  std::vector<int64_t> out = {in.dim(0), in.dim(1), 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (attrs.window[i] <= 0 || attrs.stride[i] <= 0 || attrs.padding[i] < 0 ||
        attrs.padding[i] >= attrs.window[i]) {
      return ShapeError(op, operands,
                        "window and stride must be > 0 and padding smaller "
                        "than the window");
    }
    const int64_t span = in.dim(2 + i) + 2 * attrs.padding[i] - attrs.window[i];
    if (span < 0) return ShapeError(op, operands, "window exceeds input");
    out[2 + i] = span / attrs.stride[i] + 1;
  }
  return out;
}

// Conv2D and its two gradients: (input, weights), (grad_out, weights) and
// (input, grad_out).
absl::StatusOr<Shape> InferConvolution(OpKind op, Operands operands,
                                       const OpAttrs& attrs) {
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 2));
  if (op == OpKind::kConv2D) {
    PODSCOPE_ASSIGN_OR_RETURN(std::vector<int64_t> out,
                              ConvOutput(op, operands, operands[0]->dims(),
                                         operands[1]->dims(), attrs));
    return F32Shape(std::move(out));
  }
  const bool input = op == OpKind::kConv2DBackpropInput;
  PODSCOPE_ASSIGN_OR_RETURN(
      std::vector<int64_t> out,
      input ? ConvOutput(op, operands, attrs.dims, operands[1]->dims(), attrs)
            : ConvOutput(op, operands, operands[0]->dims(), attrs.dims, attrs));
  if (out != operands[input ? 0 : 1]->dims()) {
    return ShapeError(
        op, operands,
        absl::StrCat("gradient does not match the output ", Dims(out), " of ",
                     input ? "input " : "weights ", Dims(attrs.dims)));
  }
  return F32Shape(attrs.dims);
}

// MaxPool2D (input) and its gradient (input, grad_out).
absl::StatusOr<Shape> InferPooling(OpKind op, Operands operands,
                                   const OpAttrs& attrs) {
  const bool grad = op == OpKind::kMaxPool2DGrad;
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, grad ? 2 : 1));
  PODSCOPE_ASSIGN_OR_RETURN(std::vector<int64_t> out,
                            PoolOutput(op, operands, *operands[0], attrs));
  if (!grad) return F32Shape(std::move(out));
  if (out != operands[1]->dims()) {
    return ShapeError(op, operands, "gradient does not match the output");
  }
  return *operands[0];
}

// Softmax, log-softmax, one-hot labels and the losses over class scores.
absl::StatusOr<Shape> InferSoftmaxAndLoss(OpKind op, Operands operands,
                                          const OpAttrs& attrs) {
  if (op == OpKind::kSoftmax || op == OpKind::kLogSoftmax) {
    PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 1));
    const Shape& x = *operands[0];
    if (x.element_type() != ElementType::kF32 || x.rank() == 0 ||
        attrs.axis < 0 || attrs.axis >= x.rank()) {
      return ShapeError(op, operands,
                        absl::StrCat("expects an f32 operand of rank >= 1 "
                                     "and a valid axis, got axis ",
                                     attrs.axis));
    }
    return x;
  }
  if (op == OpKind::kOneHot) {
    PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 1));
    if (operands[0]->element_type() != ElementType::kI32 || attrs.axis <= 0) {
      return ShapeError(op, operands,
                        "expects i32 labels and a positive class count");
    }
    std::vector<int64_t> dims = operands[0]->dims();
    dims.push_back(attrs.axis);
    return F32Shape(std::move(dims));
  }
  // kNllLoss, kCrossEntropyLoss.
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 2));
  const Shape& x = *operands[0];
  const Shape& labels = *operands[1];
  if (x.element_type() != ElementType::kF32 || x.rank() != 2 ||
      labels.element_type() != ElementType::kI32 || labels.rank() != 1 ||
      labels.dim(0) != x.dim(0)) {
    return ShapeError(op, operands,
                      "expects f32[n,classes] scores and i32[n] labels");
  }
  return F32Shape({});
}

absl::StatusOr<Shape> InferAllReduce(OpKind op, Operands operands,
                                     const OpAttrs& attrs) {
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 1));
  if (attrs.salt <= 0) {
    return ShapeError(op, operands,
                      absl::StrCat("communicator id ", attrs.salt,
                                   " is not a Communicator::id()"));
  }
  if (attrs.axis < 0 || attrs.axis > static_cast<int64_t>(ReduceOp::kMean)) {
    return ShapeError(op, operands,
                      absl::StrCat("reduction ", attrs.axis, " is unknown"));
  }
  if (operands[0]->element_type() == ElementType::kPred &&
      attrs.axis == static_cast<int64_t>(ReduceOp::kMean)) {
    return ShapeError(op, operands, "mean is not defined on pred");
  }
  return *operands[0];
}

absl::StatusOr<Shape> InferDropout(OpKind op, Operands operands,
                                   const OpAttrs& attrs) {
  // (x, seed)
  PODSCOPE_RETURN_IF_ERROR(CheckArity(op, operands, 2));
  if (operands[0]->element_type() != ElementType::kF32 ||
      *operands[1] != I32Shape({})) {
    return ShapeError(op, operands,
                      "expects an f32 operand and an i32 scalar seed");
  }
  // Written to reject NaN too.
  if (!(attrs.rate >= 0.0f && attrs.rate <= 1.0f)) {
    return ShapeError(op, operands,
                      absl::StrCat("rate ", attrs.rate, " is outside [0, 1]"));
  }
  if (attrs.salt < 0) {
    return ShapeError(op, operands, absl::StrCat("negative salt ", attrs.salt));
  }
  return *operands[0];
}

absl::StatusOr<Shape> InferNeuralNet(OpKind op, Operands operands,
                                     const OpAttrs& attrs) {
  for (const Shape* shape : operands) {
    if (shape->element_type() == ElementType::kPred) {
      return ShapeError(op, operands, "pred operands are not supported");
    }
  }
  switch (op) {
    case OpKind::kConv2D:
    case OpKind::kConv2DBackpropInput:
    case OpKind::kConv2DBackpropFilter:
      return InferConvolution(op, operands, attrs);
    case OpKind::kMaxPool2D:
    case OpKind::kMaxPool2DGrad:
      return InferPooling(op, operands, attrs);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kOneHot:
    case OpKind::kNllLoss:
    case OpKind::kCrossEntropyLoss:
      return InferSoftmaxAndLoss(op, operands, attrs);
    case OpKind::kAllReduce:
      return InferAllReduce(op, operands, attrs);
    case OpKind::kDropout:
      return InferDropout(op, operands, attrs);
    default:
      return ShapeError(op, operands, "not a neural-network op");
  }
}

}  // namespace

absl::StatusOr<Shape> InferShape(OpKind op, Operands operands,
                                 const OpAttrs& attrs) {
  if (IsElementwise(op)) return InferElementwise(op, operands, attrs);
  switch (op) {
    case OpKind::kParameter:
    case OpKind::kConstant:
      return ShapeError(op, operands, "has no operands to infer from");
    case OpKind::kBroadcast:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kPad:
    case OpKind::kConcat:
      return InferDataMovement(op, operands, attrs);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMean:
    case OpKind::kArgMax:
      return InferReduce(op, operands, attrs);
    case OpKind::kDot:
      return InferDot(operands);
    default:
      return InferNeuralNet(op, operands, attrs);
  }
}

}  // namespace podscope::runtime
