#include "podscope/runtime/ir/ir.h"

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace podscope::runtime {

absl::string_view OpName(OpKind op) {
  switch (op) {
    case OpKind::kParameter:
      return "parameter";
    case OpKind::kConstant:
      return "constant";
    case OpKind::kAdd:
      return "add";
    case OpKind::kSub:
      return "sub";
    case OpKind::kMul:
      return "mul";
    case OpKind::kDiv:
      return "div";
    case OpKind::kMax:
      return "max";
    case OpKind::kNeg:
      return "neg";
    case OpKind::kExp:
      return "exp";
    case OpKind::kLog:
      return "log";
    case OpKind::kTanh:
      return "tanh";
    case OpKind::kRelu:
      return "relu";
    case OpKind::kCompare:
      return "compare";
    case OpKind::kSelect:
      return "select";
    case OpKind::kConvert:
      return "convert";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReshape:
      return "reshape";
    case OpKind::kTranspose:
      return "transpose";
    case OpKind::kSlice:
      return "slice";
    case OpKind::kPad:
      return "pad";
    case OpKind::kConcat:
      return "concat";
    case OpKind::kReduceSum:
      return "reduce_sum";
    case OpKind::kReduceMax:
      return "reduce_max";
    case OpKind::kReduceMean:
      return "reduce_mean";
    case OpKind::kArgMax:
      return "argmax";
    case OpKind::kDot:
      return "dot";
    case OpKind::kConv2D:
      return "conv2d";
    case OpKind::kConv2DBackpropInput:
      return "conv2d_backprop_input";
    case OpKind::kConv2DBackpropFilter:
      return "conv2d_backprop_filter";
    case OpKind::kMaxPool2D:
      return "max_pool2d";
    case OpKind::kMaxPool2DGrad:
      return "max_pool2d_grad";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kLogSoftmax:
      return "log_softmax";
    case OpKind::kOneHot:
      return "one_hot";
    case OpKind::kNllLoss:
      return "nll_loss";
    case OpKind::kCrossEntropyLoss:
      return "cross_entropy_loss";
    case OpKind::kDropout:
      return "dropout";
    case OpKind::kAllReduce:
      return "all_reduce";
  }
  return "unknown";
}

bool IsElementwise(OpKind op) {
  switch (op) {
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
    case OpKind::kCompare:
    case OpKind::kSelect:
    case OpKind::kConvert:
      return true;
    default:
      return false;
  }
}

absl::string_view CompareDirectionName(CompareDirection direction) {
  switch (direction) {
    case CompareDirection::kEq:
      return "eq";
    case CompareDirection::kNe:
      return "ne";
    case CompareDirection::kLt:
      return "lt";
    case CompareDirection::kLe:
      return "le";
    case CompareDirection::kGt:
      return "gt";
    case CompareDirection::kGe:
      return "ge";
  }
  return "?";
}

uint64_t StableHash64(absl::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace {

void AppendAttrs(const OpAttrs& a, std::string* out) {
  absl::StrAppend(
      out, " axes=", absl::StrJoin(a.axes, ","),
      " dims=", absl::StrJoin(a.dims, ","),
      " starts=", absl::StrJoin(a.starts, ","),
      " limits=", absl::StrJoin(a.limits, ","), " axis=", a.axis,
      " keep=", a.keep_dims ? 1 : 0, " type=", ElementTypeName(a.element_type),
      " dir=", CompareDirectionName(a.direction), " window=", a.window[0], ",",
      a.window[1], " stride=", a.stride[0], ",", a.stride[1],
      " padding=", a.padding[0], ",", a.padding[1],
      " param=", a.parameter_index);
  if (a.rate != 0 || a.salt != 0) {
    // The exact bits: rates that print alike must not share executables.
    absl::StrAppend(out, " rate=", absl::bit_cast<uint32_t>(a.rate),
                    " salt=", a.salt);
  }
}

}  // namespace

Graph::Graph(std::string name, std::vector<Node> nodes,
             std::vector<int> parameters, std::vector<int> outputs)
    : name_(std::move(name)),
      nodes_(std::move(nodes)),
      parameters_(std::move(parameters)),
      outputs_(std::move(outputs)) {
  // The graph name is a label, not structure: equal computations recorded
  // under different names share one executable.
  for (const Node& node : nodes_) {
    absl::StrAppend(&key_, OpName(node.op), " ", node.shape.ToString(), " (",
                    absl::StrJoin(node.operands, ","), ")");
    AppendAttrs(node.attrs, &key_);
    absl::StrAppend(&key_, " scope=", node.scope.size(), ":", node.scope);
    if (node.attrs.literal != nullptr) {
      const Literal& literal = *node.attrs.literal;
      absl::StrAppend(&key_, " data=", literal.size_bytes(), ":");
      key_.append(static_cast<const char*>(literal.untyped_data()),
                  literal.size_bytes());
    }
    key_ += '\n';
  }
  absl::StrAppend(&key_, "outputs=", absl::StrJoin(outputs_, ","));
  fingerprint_ = StableHash64(key_);
}

std::string Graph::ToString() const {
  std::string out = absl::StrCat(
      "graph ", name_, " fingerprint=", absl::Hex(fingerprint_), "\n");
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    absl::StrAppend(&out, "  %", i, " = ", OpName(node.op), " ",
                    node.shape.ToString());
    if (!node.operands.empty()) {
      absl::StrAppend(&out, " (%", absl::StrJoin(node.operands, ", %"), ")");
    }
    if (node.op == OpKind::kParameter) {
      absl::StrAppend(&out, " index=", node.attrs.parameter_index);
    }
    if (!node.scope.empty()) absl::StrAppend(&out, " scope=", node.scope);
    out += '\n';
  }
  absl::StrAppend(&out, "  outputs: %", absl::StrJoin(outputs_, ", %"), "\n");
  return out;
}

}  // namespace podscope::runtime
