#include "podscope/runtime/ir/builder.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/ir/scope.h"

namespace podscope::runtime {

GraphBuilder::GraphBuilder(std::string name) : name_(std::move(name)) {}

absl::Status GraphBuilder::TakeStatus() {
  absl::Status status = std::move(status_);
  status_ = absl::OkStatus();
  return status;
}

Value GraphBuilder::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
  return Value();
}

Value GraphBuilder::Record(OpKind op, std::vector<Value> operands,
                           OpAttrs attrs) {
  std::vector<const Shape*> shapes;
  std::vector<int> ids;
  for (Value v : operands) {
    // An invalid operand comes from an op that already failed; its error
    // is the one worth reporting.
    if (!v.valid()) {
      return status_.ok() ? Fail(absl::InvalidArgumentError(absl::StrCat(
                                OpName(op), ": operand is an invalid value")))
                          : Value();
    }
    if (!Contains(v)) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat(OpName(op), ": operand %", v.id,
                       " does not belong to graph ", name_)));
    }
    shapes.push_back(&nodes_[v.id].shape);
    ids.push_back(v.id);
  }
  absl::StatusOr<Shape> shape = InferShape(op, shapes, attrs);
  if (!shape.ok()) return Fail(shape.status());
  nodes_.push_back(Node{op, *std::move(shape), std::move(ids), std::move(attrs),
                        CurrentScope()});
  return Value{static_cast<int>(nodes_.size()) - 1};
}

Value GraphBuilder::Parameter(const Shape& shape) {
  for (int64_t d : shape.dims()) {
    if (d < 0) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("parameter: negative dimension in ", shape.ToString())));
    }
  }
  OpAttrs attrs;
  attrs.parameter_index = num_parameters();
  nodes_.push_back(
      Node{OpKind::kParameter, shape, {}, std::move(attrs), CurrentScope()});
  parameters_.push_back(static_cast<int>(nodes_.size()) - 1);
  return Value{parameters_.back()};
}

Value GraphBuilder::Constant(Literal literal) {
  OpAttrs attrs;
  Shape shape = literal.shape();
  attrs.literal = std::make_shared<const Literal>(std::move(literal));
  nodes_.push_back(Node{OpKind::kConstant,
                        std::move(shape),
                        {},
                        std::move(attrs),
                        CurrentScope()});
  return Value{static_cast<int>(nodes_.size()) - 1};
}

Value GraphBuilder::ScalarF32(float value) {
  return Constant(Literal::ScalarF32(value));
}
Value GraphBuilder::ScalarI32(int32_t value) {
  return Constant(Literal::ScalarI32(value));
}

Value GraphBuilder::Full(const Shape& shape_ref, float value) {
  // Copied: `shape_ref` may refer to a node, and recording may move nodes.
  const Shape shape = shape_ref;
  Value scalar;
  switch (shape.element_type()) {
    case ElementType::kF32:
      scalar = ScalarF32(value);
      break;
    case ElementType::kI32:
      scalar = ScalarI32(static_cast<int32_t>(value));
      break;
    case ElementType::kPred: {
      Literal literal(PredShape({}));
      literal.mutable_data<uint8_t>()[0] = value != 0.0f ? 1 : 0;
      scalar = Constant(std::move(literal));
      break;
    }
  }
  if (shape.rank() == 0) return scalar;
  return Broadcast(scalar, shape.dims(), {});
}

Value GraphBuilder::ZerosLike(Value x) {
  if (!Contains(x)) return Record(OpKind::kBroadcast, {x}, {});
  return Full(shape(x), 0.0f);
}

Value GraphBuilder::Add(Value a, Value b) {
  return Record(OpKind::kAdd, {a, b}, {});
}
Value GraphBuilder::Sub(Value a, Value b) {
  return Record(OpKind::kSub, {a, b}, {});
}
Value GraphBuilder::Mul(Value a, Value b) {
  return Record(OpKind::kMul, {a, b}, {});
}
Value GraphBuilder::Div(Value a, Value b) {
  return Record(OpKind::kDiv, {a, b}, {});
}
Value GraphBuilder::Max(Value a, Value b) {
  return Record(OpKind::kMax, {a, b}, {});
}
Value GraphBuilder::Neg(Value x) { return Record(OpKind::kNeg, {x}, {}); }
Value GraphBuilder::Exp(Value x) { return Record(OpKind::kExp, {x}, {}); }
Value GraphBuilder::Log(Value x) { return Record(OpKind::kLog, {x}, {}); }
Value GraphBuilder::Tanh(Value x) { return Record(OpKind::kTanh, {x}, {}); }
Value GraphBuilder::Relu(Value x) { return Record(OpKind::kRelu, {x}, {}); }

Value GraphBuilder::Compare(Value a, Value b, CompareDirection direction) {
  OpAttrs attrs;
  attrs.direction = direction;
  return Record(OpKind::kCompare, {a, b}, std::move(attrs));
}

Value GraphBuilder::Select(Value pred, Value on_true, Value on_false) {
  return Record(OpKind::kSelect, {pred, on_true, on_false}, {});
}

Value GraphBuilder::Convert(Value x, ElementType type) {
  OpAttrs attrs;
  attrs.element_type = type;
  return Record(OpKind::kConvert, {x}, std::move(attrs));
}

Value GraphBuilder::Broadcast(Value x, std::vector<int64_t> out_dims,
                              std::vector<int64_t> broadcast_dims) {
  OpAttrs attrs;
  attrs.dims = std::move(out_dims);
  attrs.axes = std::move(broadcast_dims);
  return Record(OpKind::kBroadcast, {x}, std::move(attrs));
}

Value GraphBuilder::BroadcastTo(Value x, std::vector<int64_t> out_dims) {
  if (!Contains(x)) return Broadcast(x, std::move(out_dims), {});
  const int rank = shape(x).rank();
  const int out_rank = static_cast<int>(out_dims.size());
  if (rank > out_rank) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("broadcast: cannot broadcast ", shape(x).ToString(),
                     " to [", absl::StrJoin(out_dims, ","), "]")));
  }
  if (shape(x).dims() == out_dims) return x;
  std::vector<int64_t> map(rank);
  std::iota(map.begin(), map.end(), out_rank - rank);
  return Broadcast(x, std::move(out_dims), std::move(map));
}

Value GraphBuilder::Reshape(Value x, std::vector<int64_t> dims) {
  // One -1 dimension is inferred from the element count, as in NumPy.
  auto inferred = std::find(dims.begin(), dims.end(), -1);
  if (inferred != dims.end() && Contains(x)) {
    int64_t known = 1;
    for (int64_t d : dims) known *= d == -1 ? 1 : d;
    if (known > 0 && shape(x).num_elements() % known == 0) {
      *inferred = shape(x).num_elements() / known;
    }
  }
  OpAttrs attrs;
  attrs.dims = std::move(dims);
  return Record(OpKind::kReshape, {x}, std::move(attrs));
}

Value GraphBuilder::Transpose(Value x, std::vector<int64_t> permutation) {
  OpAttrs attrs;
  attrs.axes = std::move(permutation);
  return Record(OpKind::kTranspose, {x}, std::move(attrs));
}

Value GraphBuilder::Slice(Value x, std::vector<int64_t> starts,
                          std::vector<int64_t> limits) {
  OpAttrs attrs;
  attrs.starts = std::move(starts);
  attrs.limits = std::move(limits);
  return Record(OpKind::kSlice, {x}, std::move(attrs));
}

Value GraphBuilder::Pad(Value x, std::vector<int64_t> low,
                        std::vector<int64_t> high) {
  OpAttrs attrs;
  attrs.starts = std::move(low);
  attrs.limits = std::move(high);
  return Record(OpKind::kPad, {x}, std::move(attrs));
}

Value GraphBuilder::Concat(absl::Span<const Value> values, int64_t axis) {
  OpAttrs attrs;
  attrs.axis = axis;
  return Record(OpKind::kConcat,
                std::vector<Value>(values.begin(), values.end()),
                std::move(attrs));
}

namespace {

OpAttrs ReduceAttrs(std::vector<int64_t> axes, bool keep_dims) {
  std::sort(axes.begin(), axes.end());
  OpAttrs attrs;
  attrs.axes = std::move(axes);
  attrs.keep_dims = keep_dims;
  return attrs;
}

// Negative axes count from the end, as in NumPy.
int64_t NormalizeAxis(int64_t axis, int rank) {
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

Value GraphBuilder::ReduceSum(Value x, std::vector<int64_t> axes, bool keep) {
  return Record(OpKind::kReduceSum, {x}, ReduceAttrs(std::move(axes), keep));
}
Value GraphBuilder::ReduceMax(Value x, std::vector<int64_t> axes, bool keep) {
  return Record(OpKind::kReduceMax, {x}, ReduceAttrs(std::move(axes), keep));
}
Value GraphBuilder::ReduceMean(Value x, std::vector<int64_t> axes, bool keep) {
  return Record(OpKind::kReduceMean, {x}, ReduceAttrs(std::move(axes), keep));
}

Value GraphBuilder::ArgMax(Value x, int64_t axis, bool keep_dims) {
  OpAttrs attrs;
  attrs.axis = Contains(x) ? NormalizeAxis(axis, shape(x).rank()) : axis;
  attrs.keep_dims = keep_dims;
  return Record(OpKind::kArgMax, {x}, std::move(attrs));
}

Value GraphBuilder::Dot(Value a, Value b) {
  return Record(OpKind::kDot, {a, b}, {});
}

Value GraphBuilder::Conv2D(Value input, Value weights, Hw stride, Hw padding) {
  OpAttrs attrs;
  attrs.stride = stride;
  attrs.padding = padding;
  return Record(OpKind::kConv2D, {input, weights}, std::move(attrs));
}

Value GraphBuilder::MaxPool2D(Value input, Hw window, Hw stride, Hw padding) {
  OpAttrs attrs;
  attrs.window = window;
  attrs.stride = {stride[0] == 0 ? window[0] : stride[0],
                  stride[1] == 0 ? window[1] : stride[1]};
  attrs.padding = padding;
  return Record(OpKind::kMaxPool2D, {input}, std::move(attrs));
}

Value GraphBuilder::Softmax(Value x, int64_t axis) {
  OpAttrs attrs;
  attrs.axis = Contains(x) ? NormalizeAxis(axis, shape(x).rank()) : axis;
  return Record(OpKind::kSoftmax, {x}, std::move(attrs));
}

Value GraphBuilder::LogSoftmax(Value x, int64_t axis) {
  OpAttrs attrs;
  attrs.axis = Contains(x) ? NormalizeAxis(axis, shape(x).rank()) : axis;
  return Record(OpKind::kLogSoftmax, {x}, std::move(attrs));
}

Value GraphBuilder::OneHot(Value labels, int64_t num_classes) {
  OpAttrs attrs;
  attrs.axis = num_classes;
  return Record(OpKind::kOneHot, {labels}, std::move(attrs));
}

Value GraphBuilder::NllLoss(Value log_probs, Value labels) {
  return Record(OpKind::kNllLoss, {log_probs, labels}, {});
}

Value GraphBuilder::CrossEntropyLoss(Value logits, Value labels) {
  return Record(OpKind::kCrossEntropyLoss, {logits, labels}, {});
}

Value GraphBuilder::Dropout(Value x, Value seed, float rate, int64_t salt) {
  OpAttrs attrs;
  attrs.rate = rate;
  attrs.salt = salt >= 0 ? salt : next_dropout_salt_;
  Value result = Record(OpKind::kDropout, {x, seed}, std::move(attrs));
  if (result.valid()) {
    next_dropout_salt_ =
        std::max(next_dropout_salt_, node(result).attrs.salt + 1);
  }
  return result;
}

Value GraphBuilder::AllReduce(Value x, int64_t communicator, ReduceOp op) {
  OpAttrs attrs;
  attrs.salt = communicator;
  attrs.axis = static_cast<int64_t>(op);
  return Record(OpKind::kAllReduce, {x}, std::move(attrs));
}

Value GraphBuilder::Conv2DBackpropInput(Value grad_out, Value weights,
                                        const Shape& input_shape, Hw stride,
                                        Hw padding) {
  OpAttrs attrs;
  attrs.dims = input_shape.dims();
  attrs.stride = stride;
  attrs.padding = padding;
  return Record(OpKind::kConv2DBackpropInput, {grad_out, weights},
                std::move(attrs));
}

Value GraphBuilder::Conv2DBackpropFilter(Value input, Value grad_out,
                                         const Shape& weights_shape, Hw stride,
                                         Hw padding) {
  OpAttrs attrs;
  attrs.dims = weights_shape.dims();
  attrs.stride = stride;
  attrs.padding = padding;
  return Record(OpKind::kConv2DBackpropFilter, {input, grad_out},
                std::move(attrs));
}

Value GraphBuilder::MaxPool2DGrad(Value input, Value grad_out, Hw window,
                                  Hw stride, Hw padding) {
  OpAttrs attrs;
  attrs.window = window;
  attrs.stride = stride;
  attrs.padding = padding;
  return Record(OpKind::kMaxPool2DGrad, {input, grad_out}, std::move(attrs));
}

absl::StatusOr<Graph> GraphBuilder::Build(
    absl::Span<const Value> outputs) const {
  PODSCOPE_RETURN_IF_ERROR(status_);
  if (outputs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Build(", name_, "): a graph needs at least one output"));
  }
  std::vector<bool> live(nodes_.size(), false);
  for (Value v : outputs) {
    if (!Contains(v)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Build(", name_, "): output %", v.id, " is not a node of the graph"));
    }
    live[v.id] = true;
  }
  for (int id : parameters_) live[id] = true;
  for (int id = static_cast<int>(nodes_.size()) - 1; id >= 0; --id) {
    if (!live[id]) continue;
    for (int operand : nodes_[id].operands) live[operand] = true;
  }
  // Renumber the live nodes densely, keeping topological order.
  std::vector<int> new_id(nodes_.size(), -1);
  std::vector<Node> nodes;
  std::vector<int> parameters;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    if (!live[id]) continue;
    Node node = nodes_[id];
    for (int& operand : node.operands) operand = new_id[operand];
    new_id[id] = static_cast<int>(nodes.size());
    if (node.op == OpKind::kParameter) parameters.push_back(new_id[id]);
    nodes.push_back(std::move(node));
  }
  std::vector<int> output_ids;
  for (Value v : outputs) output_ids.push_back(new_id[v.id]);
  return Graph(name_, std::move(nodes), std::move(parameters),
               std::move(output_ids));
}

}  // namespace podscope::runtime
