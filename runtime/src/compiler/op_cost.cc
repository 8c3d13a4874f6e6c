#include "compiler/op_cost.h"

#include <vector>

namespace podscope::runtime::internal {
namespace {

// 2 * N * O * OH * OW * C * KH * KW for input dims (N, C, H, W), weight
// dims (O, C, KH, KW) and output dims (N, O, OH, OW).
int64_t ConvFlops(const std::vector<int64_t>& input,
                  const std::vector<int64_t>& weights,
                  const std::vector<int64_t>& output) {
  if (input.size() != 4 || weights.size() != 4 || output.size() != 4) return 0;
  return 2 * output[0] * output[1] * output[2] * output[3] * input[1] *
         weights[2] * weights[3];
}

int64_t Flops(const Node& node, absl::Span<const Shape* const> operands) {
  const int64_t out_elements = node.shape.num_elements();
  auto operand = [&](size_t i) -> const Shape& { return *operands[i]; };
  if (IsElementwise(node.op)) return ElementwiseFlops(node.op, out_elements);
  switch (node.op) {
    case OpKind::kDot: {
      if (operands.size() != 2) return 0;
      const Shape& a = operand(0);
      const int64_t k = a.dim(a.rank() - 1);
      return 2 * out_elements * k;
    }
    case OpKind::kConv2D:  // (input, weights) -> output
      if (operands.size() != 2) return 0;
      return ConvFlops(operand(0).dims(), operand(1).dims(), node.shape.dims());
    case OpKind::kConv2DBackpropInput:  // (grad_out, weights) -> input
      if (operands.size() != 2) return 0;
      return ConvFlops(node.shape.dims(), operand(1).dims(), operand(0).dims());
    case OpKind::kConv2DBackpropFilter:  // (input, grad_out) -> weights
      if (operands.size() != 2) return 0;
      return ConvFlops(operand(0).dims(), node.shape.dims(), operand(1).dims());
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kArgMax:
      return operands.empty() ? 0 : operand(0).num_elements();
    case OpKind::kReduceMean:
      return operands.empty() ? 0 : operand(0).num_elements() + out_elements;
    case OpKind::kMaxPool2D:
      return out_elements * node.attrs.window[0] * node.attrs.window[1];
    case OpKind::kMaxPool2DGrad:  // (input, grad_out): per pooled element
      return operands.size() < 2
                 ? 0
                 : operand(1).num_elements() * node.attrs.window[0] *
                       node.attrs.window[1];
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      return 5 * out_elements;
    case OpKind::kCrossEntropyLoss:
      return operands.empty()
                 ? 0
                 : 5 * operand(0).num_elements() + operand(0).dim(0);
    case OpKind::kNllLoss:
      return operands.empty() ? 0 : operand(0).dim(0);
    case OpKind::kDropout:
    case OpKind::kAllReduce:
      return out_elements;
    default:  // data movement, one_hot, parameters, constants
      return 0;
  }
}

}  // namespace

int64_t ElementwiseFlops(OpKind op, int64_t num_elements) {
  return IsElementwise(op) ? num_elements : 0;
}

OpCost NodeCost(const Node& node,
                absl::Span<const Shape* const> operand_shapes) {
  OpCost cost;
  if (node.op == OpKind::kParameter || node.op == OpKind::kConstant) {
    return cost;
  }
  cost.flops = Flops(node, operand_shapes);
  cost.bytes_accessed = node.shape.byte_size();
  for (const Shape* shape : operand_shapes) {
    cost.bytes_accessed += shape->byte_size();
  }
  return cost;
}

OpCost NodeCost(const Graph& graph, int id) {
  const Node& node = graph.node(id);
  std::vector<const Shape*> shapes;
  shapes.reserve(node.operands.size());
  for (int operand : node.operands)
    shapes.push_back(&graph.node(operand).shape);
  return NodeCost(node, shapes);
}

}  // namespace podscope::runtime::internal
