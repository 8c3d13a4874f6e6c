// Building computations: GraphBuilder records typed ops into a Graph. Each
// op infers its result shape when recorded; the first error (naming the op
// and the shapes) is kept and returned by Build(), and ops on an invalid
// Value return invalid Values instead of failing the program.
#ifndef PODSCOPE_RUNTIME_IR_BUILDER_H_
#define PODSCOPE_RUNTIME_IR_BUILDER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/ir/shape.h"
#include "podscope/runtime/reduce_op.h"

namespace podscope::runtime {

// A handle to a node of the graph under construction.
struct Value {
  int id = -1;
  bool valid() const { return id >= 0; }
};

using Hw = std::array<int64_t, 2>;  // (height, width) pairs for conv/pool

// Records a typed computation. Every op infers its result shape when it is
// recorded; the first error (naming the op and the shapes involved) is kept
// in status(), the op returns an invalid Value, and every op that uses an
// invalid Value also returns one. Build() reports the kept error.
//
// Each node remembers the ScopedName scope active when it was recorded.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");

  // Parameters are numbered in the order they are created.
  Value Parameter(const Shape& shape);
  Value Constant(Literal literal);
  Value ScalarF32(float value);
  Value ScalarI32(int32_t value);
  // A constant array of `shape` filled with `value`.
  Value Full(const Shape& shape, float value);
  Value ZerosLike(Value x);

  Value Add(Value a, Value b);
  Value Sub(Value a, Value b);
  Value Mul(Value a, Value b);
  Value Div(Value a, Value b);
  Value Max(Value a, Value b);
  Value Neg(Value x);
  Value Exp(Value x);
  Value Log(Value x);
  Value Tanh(Value x);
  Value Relu(Value x);
  Value Compare(Value a, Value b, CompareDirection direction);
  Value Select(Value pred, Value on_true, Value on_false);
  Value Convert(Value x, ElementType type);

  // XLA BroadcastInDim: operand dimension i maps to output dimension
  // broadcast_dims[i] (strictly increasing) and must be 1 or equal to it.
  Value Broadcast(Value x, std::vector<int64_t> out_dims,
                  std::vector<int64_t> broadcast_dims);
  // NumPy-style: aligns trailing dimensions.
  Value BroadcastTo(Value x, std::vector<int64_t> out_dims);
  Value Reshape(Value x, std::vector<int64_t> dims);
  Value Transpose(Value x, std::vector<int64_t> permutation);
  // Elements [starts, limits) of every dimension.
  Value Slice(Value x, std::vector<int64_t> starts,
              std::vector<int64_t> limits);
  // Zero padding of `low` and `high` elements per dimension.
  Value Pad(Value x, std::vector<int64_t> low, std::vector<int64_t> high);
  Value Concat(absl::Span<const Value> values, int64_t axis);

  Value ReduceSum(Value x, std::vector<int64_t> axes, bool keep_dims = false);
  Value ReduceMax(Value x, std::vector<int64_t> axes, bool keep_dims = false);
  Value ReduceMean(Value x, std::vector<int64_t> axes, bool keep_dims = false);
  // Index (i32) of the first maximum along `axis`.
  Value ArgMax(Value x, int64_t axis, bool keep_dims = false);

  // [m,k]x[k,n] -> [m,n] or batched [b,m,k]x[b,k,n] -> [b,m,n].
  Value Dot(Value a, Value b);
  // Input NCHW, weights OIHW, result NOHW.
  Value Conv2D(Value input, Value weights, Hw stride = {1, 1},
               Hw padding = {0, 0});
  // Stride defaults to the window; padding is never selected by the max.
  Value MaxPool2D(Value input, Hw window, Hw stride = {0, 0},
                  Hw padding = {0, 0});
  Value Softmax(Value x, int64_t axis = -1);
  Value LogSoftmax(Value x, int64_t axis = -1);
  // labels i32[n] -> f32[n, num_classes].
  Value OneHot(Value labels, int64_t num_classes);
  // Mean over the batch of -log_probs[i, labels[i]]; log_probs f32[n,c].
  Value NllLoss(Value log_probs, Value labels);
  // NllLoss(LogSoftmax(logits)) computed in one stable pass.
  Value CrossEntropyLoss(Value logits, Value labels);
  // Inverted dropout (torch.nn.Dropout in training mode): zeroes each
  // element of f32 `x` with probability `rate` in [0, 1] and scales the
  // others by 1 / (1 - rate). The mask is a pure function of the i32 scalar
  // `seed`, `salt` and the element's index: pass the seed as a parameter so
  // that a new seed each step reuses one executable. Masks of one seed
  // differ by salt; a negative salt takes the next unused one of this
  // builder. The gradient is dropout of the adjoint with the same mask.
  Value Dropout(Value x, Value seed, float rate, int64_t salt = -1);
  // x reduced elementwise across the processes of the communicator with id
  // `communicator` (Communicator::id(), collectives.h), run on the device
  // stream when the computation executes. Every rank must execute the same
  // all_reduce ops in the same order; on a process with several devices,
  // give each device its own communicator. The gradient of sum and mean is
  // the same all-reduce of the adjoint.
  Value AllReduce(Value x, int64_t communicator, ReduceOp op);

  // Gradient building blocks (used by Grad).
  Value Conv2DBackpropInput(Value grad_out, Value weights,
                            const Shape& input_shape, Hw stride, Hw padding);
  Value Conv2DBackpropFilter(Value input, Value grad_out,
                             const Shape& weights_shape, Hw stride, Hw padding);
  Value MaxPool2DGrad(Value input, Value grad_out, Hw window, Hw stride,
                      Hw padding);

  // The first error recorded, or OK.
  const absl::Status& status() const { return status_; }
  // Returns the recorded error and clears it, so recording can go on.
  absl::Status TakeStatus();

  bool Contains(Value v) const {
    return v.id >= 0 && v.id < static_cast<int>(nodes_.size());
  }
  // Requires Contains(v).
  const Node& node(Value v) const { return nodes_[v.id]; }
  const Shape& shape(Value v) const { return nodes_[v.id].shape; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_parameters() const { return static_cast<int>(parameters_.size()); }
  const std::string& name() const { return name_; }

  // A graph of every node the outputs depend on, plus all parameters (so
  // the executable's signature matches the Parameter calls).
  absl::StatusOr<Graph> Build(absl::Span<const Value> outputs) const;

 private:
  Value Record(OpKind op, std::vector<Value> operands, OpAttrs attrs);
  Value Fail(absl::Status status);

  std::string name_;
  std::vector<Node> nodes_;
  std::vector<int> parameters_;
  int64_t next_dropout_salt_ = 0;
  absl::Status status_;
};

// Infers the result shape of `op` over operand shapes, or returns an error
// that names the op and the shapes involved.
absl::StatusOr<Shape> InferShape(OpKind op,
                                 absl::Span<const Shape* const> operands,
                                 const OpAttrs& attrs);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_IR_BUILDER_H_
