// The typed intermediate representation: ops, their attributes, nodes in
// topological order and verified immutable Graphs with a structural key (the
// compile cache's) and a stable fingerprint, equal across processes.
#ifndef PODSCOPE_RUNTIME_IR_IR_H_
#define PODSCOPE_RUNTIME_IR_IR_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"
#include "podscope/runtime/ir/literal.h"
#include "podscope/runtime/ir/shape.h"

namespace podscope::runtime {

enum class OpKind : uint8_t {
  kParameter,
  kConstant,
  // Elementwise; operands and result have one shape (compare yields pred).
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,
  kNeg,
  kExp,
  kLog,
  kTanh,
  kRelu,
  kCompare,
  kSelect,
  kConvert,
  // Data movement.
  kBroadcast,
  kReshape,
  kTranspose,
  kSlice,
  kPad,
  kConcat,
  // Reductions.
  kReduceSum,
  kReduceMax,
  kReduceMean,
  kArgMax,
  // Contractions and neural-network ops.
  kDot,
  kConv2D,
  kConv2DBackpropInput,
  kConv2DBackpropFilter,
  kMaxPool2D,
  kMaxPool2DGrad,
  kSoftmax,
  kLogSoftmax,
  kOneHot,
  kNllLoss,
  kCrossEntropyLoss,
  // Inverted dropout with a mask drawn from (seed operand, salt).
  kDropout,
  kAllReduce,
};

// Lower-case op name as it appears in errors and traces, e.g. "conv2d".
absl::string_view OpName(OpKind op);
bool IsElementwise(OpKind op);

enum class CompareDirection : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
absl::string_view CompareDirectionName(CompareDirection direction);

// Op attributes; each op reads only the fields documented for it.
struct OpAttrs {
  // reduce*: axes. transpose: permutation. broadcast: for each operand
  // dimension, the output dimension it maps to.
  std::vector<int64_t> axes;
  // broadcast and reshape: result dimensions. conv2d_backprop_*: the
  // dimensions of the input or weights being differentiated.
  std::vector<int64_t> dims;
  // slice: start and limit indices. pad: low and high padding.
  std::vector<int64_t> starts;
  std::vector<int64_t> limits;
  // concat, softmax, log_softmax, argmax: the axis. one_hot: class count.
  int64_t axis = 0;
  bool keep_dims = false;                        // reductions
  ElementType element_type = ElementType::kF32;  // convert: target type
  CompareDirection direction = CompareDirection::kEq;
  // conv2d and pooling (height, width).
  std::array<int64_t, 2> window = {0, 0};
  std::array<int64_t, 2> stride = {1, 1};
  std::array<int64_t, 2> padding = {0, 0};
  // dropout: the probability of zeroing an element, and which of the masks
  // drawn from one seed this is (see GraphBuilder::Dropout).
  float rate = 0;
  int64_t salt = 0;
  // all_reduce: `salt` holds the communicator's id (Communicator::id()) and
  // `axis` the ReduceOp.
  int64_t parameter_index = -1;
  std::shared_ptr<const Literal> literal;  // constant
};

struct Node {
  OpKind op;
  Shape shape;
  std::vector<int> operands;  // ids of earlier nodes
  OpAttrs attrs;
  // The user scope (ScopedName stack) active when the node was recorded.
  std::string scope;
};

// A verified, immutable computation: nodes in topological order, the
// parameter nodes by parameter index, and the output nodes.
class Graph {
 public:
  Graph() = default;
  Graph(std::string name, std::vector<Node> nodes, std::vector<int> parameters,
        std::vector<int> outputs);

  const std::string& name() const { return name_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const { return nodes_[id]; }
  const std::vector<int>& parameters() const { return parameters_; }
  const std::vector<int>& outputs() const { return outputs_; }

  // A serialization of everything that determines the computed result and
  // the op provenance; equal keys mean interchangeable executables.
  const std::string& structural_key() const { return key_; }
  // Stable 64-bit hash of structural_key(): equal across processes and runs,
  // so traces from many hosts name the same graph alike.
  uint64_t fingerprint() const { return fingerprint_; }

  // Human-readable listing, one node per line.
  std::string ToString() const;

 private:
  std::string name_;
  std::vector<Node> nodes_;
  std::vector<int> parameters_;
  std::vector<int> outputs_;
  std::string key_;
  uint64_t fingerprint_ = 0;
};

// FNV-1a, used for stable fingerprints.
uint64_t StableHash64(absl::string_view bytes);

}  // namespace podscope::runtime

#endif  // PODSCOPE_RUNTIME_IR_IR_H_
