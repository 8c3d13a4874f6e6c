#include "compiler/compiler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/buffer_plan.h"
#include "compiler/op_cost.h"
#include "podscope/base/status_macros.h"
#include "podscope/runtime/ir/builder.h"

namespace podscope::runtime::internal {
namespace {

absl::Status Verify(const Graph& graph) {
  const auto& nodes = graph.nodes();
  int next_parameter = 0;
  for (size_t id = 0; id < nodes.size(); ++id) {
    const Node& node = nodes[id];
    std::vector<const Shape*> shapes;
    for (int operand : node.operands) {
      if (operand < 0 || operand >= static_cast<int>(id)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "compile ", graph.name(), ": node %", id, " (", OpName(node.op),
            ") uses %", operand, ", which is not an earlier node"));
      }
      shapes.push_back(&nodes[operand].shape);
    }
    if (node.op == OpKind::kParameter) {
      if (node.attrs.parameter_index != next_parameter ||
          graph.parameters().size() <= static_cast<size_t>(next_parameter) ||
          graph.parameters()[next_parameter] != static_cast<int>(id)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "compile ", graph.name(), ": parameter %", id, " has index ",
            node.attrs.parameter_index, ", expected ", next_parameter));
      }
      ++next_parameter;
      continue;
    }
    if (node.op == OpKind::kConstant) {
      if (node.attrs.literal == nullptr ||
          node.attrs.literal->shape() != node.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat("compile ", graph.name(), ": constant %", id,
                         " has no literal of shape ", node.shape.ToString()));
      }
      continue;
    }
    absl::StatusOr<Shape> shape = InferShape(node.op, shapes, node.attrs);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("compile ", graph.name(),
                                                     ": node %", id, ": ",
                                                     shape.status().message()));
    }
    if (*shape != node.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("compile ", graph.name(), ": node %", id, " (",
                       OpName(node.op), ") declares ", node.shape.ToString(),
                       " but computes ", shape->ToString()));
    }
  }
  if (next_parameter != static_cast<int>(graph.parameters().size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compile ", graph.name(), ": parameter list does not match nodes"));
  }
  if (graph.outputs().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("compile ", graph.name(), ": no outputs"));
  }
  for (int output : graph.outputs()) {
    if (output < 0 || output >= static_cast<int>(nodes.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "compile ", graph.name(), ": output %", output, " out of range"));
    }
  }
  return absl::OkStatus();
}

// The kernel of a node that is computed by its own step: a fusion's root
// (`fusion` >= 0) or an unfused op, with its cost and shapes for traces.
Step MakeStep(const CompiledProgram& program, int id, int fusion) {
  const Graph& graph = program.graph;
  const Node& node = graph.node(id);
  Step step;
  step.node = id;
  if (fusion >= 0) {
    const FusedProgram& fused = program.fusions[fusion];
    step.fusion = fusion;
    step.inputs = fused.inputs;
    step.num_ops = static_cast<int>(fused.members.size());
    step.op_name = step.num_ops > 1 ? "fusion" : std::string(OpName(node.op));
    for (int member : fused.members) {
      step.flops += ElementwiseFlops(graph.node(member).op,
                                     graph.node(member).shape.num_elements());
    }
    step.bytes_accessed = node.shape.byte_size();
    for (int input : fused.inputs) {
      step.bytes_accessed += graph.node(input).shape.byte_size();
    }
  } else {
    step.inputs = node.operands;
    step.op_name = std::string(OpName(node.op));
    const OpCost cost = NodeCost(graph, id);
    step.flops = cost.flops;
    step.bytes_accessed = cost.bytes_accessed;
  }
  step.shape = node.shape.ToString();
  for (int input : step.inputs) {
    if (!step.operand_shapes.empty()) step.operand_shapes.push_back(' ');
    step.operand_shapes += graph.node(input).shape.ToString();
  }
  return step;
}

// Fuses elementwise trees and orders the kernels by their root nodes
// (topological); parameters and constants get their locations.
void OrderKernels(CompiledProgram& program) {
  const Graph& graph = program.graph;
  program.fusions = FormFusions(graph);
  const int n = static_cast<int>(graph.nodes().size());
  // Which fusion (if any) each node belongs to, and whether it is the root.
  std::vector<int> fusion_of(n, -1);
  std::vector<bool> is_root(n, false);
  for (size_t f = 0; f < program.fusions.size(); ++f) {
    const FusedProgram& fusion = program.fusions[f];
    for (int id : fusion.members) fusion_of[id] = static_cast<int>(f);
    is_root[fusion.members.back()] = true;
    if (fusion.members.size() > 1) {
      ++program.stats.num_fusions;
      program.stats.num_fused_ops += static_cast<int>(fusion.members.size());
    }
  }
  std::vector<ValueLocation>& locations = program.locations;
  locations.resize(n);
  for (int id = 0; id < n; ++id) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kParameter) {
      locations[id] = {ValueLocation::kParameter, node.attrs.parameter_index};
      continue;
    }
    if (node.op == OpKind::kConstant) {
      locations[id] = {ValueLocation::kConstant, 0};
      continue;
    }
    if (fusion_of[id] >= 0 && !is_root[id]) continue;  // computed in a tile
    program.steps.push_back(MakeStep(program, id, fusion_of[id]));
  }
}

// Outputs computed by a step write straight into their output buffer.
void PlaceOutputs(CompiledProgram& program) {
  const auto& outputs = program.graph.outputs();
  program.output_is_copy.assign(outputs.size(), true);
  for (size_t i = 0; i < outputs.size(); ++i) {
    ValueLocation& location = program.locations[outputs[i]];
    if (location.kind == ValueLocation::kNone) {
      location = {ValueLocation::kOutput, static_cast<int64_t>(i)};
      program.output_is_copy[i] = false;
    }
  }
}

// Output tags name the op computing each output (its step's op name).
void TagOutputs(CompiledProgram& program) {
  std::vector<int> step_of(program.graph.nodes().size(), -1);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    step_of[program.steps[s].node] = static_cast<int>(s);
  }
  for (int output : program.graph.outputs()) {
    const Node& node = program.graph.node(output);
    const absl::string_view op = OpName(node.op);
    AllocationTag tag{std::string_view(op.data(), op.size()), node.scope};
    if (step_of[output] >= 0) tag.op = program.steps[step_of[output]].op_name;
    program.output_tags.push_back(tag);
  }
}

// Every other step result goes into the arena, reusing dead slots.
BufferPlan PlanArena(CompiledProgram& program) {
  const Graph& graph = program.graph;
  std::vector<ValueLocation>& locations = program.locations;
  std::vector<int> last_use(graph.nodes().size(), -1);
  for (size_t s = 0; s < program.steps.size(); ++s) {
    for (int input : program.steps[s].inputs) {
      last_use[input] = static_cast<int>(s);
    }
  }
  const int final_step = static_cast<int>(program.steps.size());
  std::vector<PlanRequest> requests;
  std::vector<int> requested_nodes;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const int id = program.steps[s].node;
    if (locations[id].kind != ValueLocation::kNone) continue;
    // A value still needed to fill a copied output stays live to the end.
    int last = std::max(last_use[id], static_cast<int>(s));
    for (int output : graph.outputs()) {
      if (output == id) last = final_step;
    }
    requests.push_back(
        {graph.node(id).shape.byte_size(), static_cast<int>(s), last});
    requested_nodes.push_back(id);
  }
  const BufferPlan plan = PlanBuffers(requests);
  for (size_t r = 0; r < requests.size(); ++r) {
    locations[requested_nodes[r]] = {ValueLocation::kArena, plan.offsets[r]};
  }
  program.arena_bytes = plan.arena_bytes;
  return plan;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledProgram>> CompileGraph(
    const Graph& graph) {
  PODSCOPE_RETURN_IF_ERROR(Verify(graph));
  auto program = std::make_unique<CompiledProgram>();
  program->graph = graph;
  OrderKernels(*program);
  PlaceOutputs(*program);
  TagOutputs(*program);
  const BufferPlan plan = PlanArena(*program);

  CompileStats& stats = program->stats;
  stats.num_nodes = static_cast<int>(graph.nodes().size());
  stats.num_kernels = static_cast<int>(program->steps.size());
  stats.num_buffer_slots = plan.num_slots;
  stats.intermediate_bytes = plan.arena_bytes;
  stats.unplanned_intermediate_bytes = plan.unplanned_bytes;
  return program;
}

}  // namespace podscope::runtime::internal
