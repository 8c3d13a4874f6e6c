// Internal to the SPMD partitioner: the per-node sharding plan that
// propagation computes, and the per-device programs built from it.
#ifndef PODSCOPE_RUNTIME_SRC_SPMD_PLAN_H_
#define PODSCOPE_RUNTIME_SRC_SPMD_PLAN_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/spmd.h"

namespace podscope::runtime::spmd {

// How a value is laid out: per dimension the mesh axes it is tiled over,
// plus mesh axes over which the devices hold partial results (their sum, or
// max, is the value).
struct State {
  std::vector<std::vector<int>> dims;
  std::vector<int> partial;
  bool partial_max = false;

  bool has_partial() const { return !partial.empty(); }
  friend bool operator==(const State& a, const State& b) {
    return a.dims == b.dims && a.partial == b.partial &&
           (a.partial.empty() || a.partial_max == b.partial_max);
  }
};

State FromSharding(const Sharding& sharding);
Sharding ToSharding(const State& state, std::shared_ptr<const Mesh> mesh);
// "('data', None)" plus " partial('data')"; "replicated" if nothing tiled.
std::string StateString(const State& state,
                        const std::shared_ptr<const Mesh>& mesh);
// The axes a state tiles or holds partial over.
std::vector<int> UsedAxes(const State& state);

// What the partitioner does for a node.
enum class Rule {
  kParameter,
  kLocal,       // the same op on the local shards (shape attrs made local)
  kReduce,      // reduction; reduced tiled dims become partial
  kDot,         // dot / conv2d family: contraction may be partial
  kNllLoss,     // batch-tiled NLL loss: a partial sum
  kReplicated,  // everything gathered, the op runs on the full values
};

struct NodePlan {
  Rule rule = Rule::kLocal;
  State out;                    // the op's result on every device
  std::vector<State> operands;  // what the op needs its operands to be
  // Contraction dimensions of each operand that must hold zeros in their
  // padding (uneven tiles); -1 entries are ignored.
  std::vector<std::vector<int>> masked_dims;
  std::optional<State> annotation;  // forced after the op (MarkSharding)
};

struct Plan {
  std::vector<NodePlan> nodes;
  // The state consumers see: the annotation if any, else out.
  const State& final_state(int id) const {
    return nodes[id].annotation ? *nodes[id].annotation : nodes[id].out;
  }
};

absl::StatusOr<Plan> Propagate(const Graph& graph, const Mesh& mesh,
                               const std::vector<State>& parameters,
                               const std::map<int, State>& annotations);

// One device's share of the program: compute segments separated by
// collectives. Values are numbered slots, equal on every device.
struct Segment {
  Graph graph;
  std::vector<int> inputs;   // slots bound to the graph's parameters
  std::vector<int> outputs;  // slots the graph's outputs fill
  std::string shard_shapes;  // the outputs' local shapes, for traces
};
struct CollectiveStep {
  int input = -1;
  int output = -1;
  State from;
  State to;
  Shape global;
  int index = -1;  // into SpmdProgram::collectives()
};
struct Step {
  bool collective = false;
  Segment segment;
  CollectiveStep exchange;
};
struct DeviceProgram {
  std::vector<Step> steps;
  std::vector<int> parameter_slots;
  std::vector<int> output_slots;
  int num_slots = 0;
};

// Records `node` over its local operands `x` (`global`: the operands'
// global shapes) as an op producing `local_out`; `partial`: the plan makes
// the result a partial sum (a mean or NLL loss is rescaled to its share).
absl::StatusOr<Value> RecordLocalOp(GraphBuilder& g, const Node& node,
                                    const std::vector<Value>& x,
                                    const std::vector<Shape>& global,
                                    const Shape& local_out, bool partial);

// ExtractShard into `shard` (of the tile's shape, any contents: all of it
// is written, the padding with zeros), so that a repeated step can reuse
// its host memory.
void ExtractShardInto(const Literal& global, const Sharding& sharding,
                      int position, Literal& shard);
// InsertShard from a tile that is not a literal (`shard`: an array of
// `shard_shape`, e.g. a device buffer's memory).
void InsertShardFrom(const void* shard, const Shape& shard_shape,
                     const Sharding& sharding, int position, Literal& global);

// Builds the program of the device at mesh `position`; the collectives are
// appended to `collectives` when it is non-null (the same on every device).
absl::StatusOr<DeviceProgram> BuildDeviceProgram(
    const Graph& graph, const Plan& plan,
    const std::shared_ptr<const Mesh>& mesh, int position,
    const std::vector<std::string>& names,
    std::vector<InsertedCollective>* collectives);

}  // namespace podscope::runtime::spmd

#endif  // PODSCOPE_RUNTIME_SRC_SPMD_PLAN_H_
