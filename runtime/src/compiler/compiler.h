#ifndef PODSCOPE_RUNTIME_SRC_COMPILER_COMPILER_H_
#define PODSCOPE_RUNTIME_SRC_COMPILER_COMPILER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/fusion.h"
#include "pjrt/device_memory.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/pjrt/executable.h"

namespace podscope::runtime::internal {

// Where a node's value lives during an execution.
struct ValueLocation {
  enum Kind { kNone, kParameter, kConstant, kArena, kOutput };
  Kind kind = kNone;
  int64_t index = 0;  // parameter or output index, or arena offset
};

// One kernel launch: a fused elementwise tree or a single op.
struct Step {
  int node = 0;             // the node whose value the step produces
  std::vector<int> inputs;  // node ids read
  int fusion = -1;          // index into CompiledProgram::fusions, or -1
  std::string op_name;      // as traced: "dot", "fusion", ...
  int num_ops = 1;
  // The kernel's cost (op_cost.h): traced as `flops` and `bytes_accessed`.
  int64_t flops = 0;
  int64_t bytes_accessed = 0;
  // Traced as `shape` and `operand_shapes` ("f32[64,10]", "f32[64,20]
  // f32[20,10]"): the local shapes, so an SPMD device kernel shows the
  // shard it computed. Made once per compile.
  std::string shape;
  std::string operand_shapes;
};

struct CompiledProgram {
  Graph graph;
  CompileStats stats;
  std::vector<FusedProgram> fusions;
  std::vector<Step> steps;
  std::vector<ValueLocation> locations;  // per node
  int64_t arena_bytes = 0;
  // Outputs whose value is not written by a step into that output's own
  // buffer (parameters, constants, repeated outputs) are copied at the end.
  std::vector<bool> output_is_copy;
  // What each output buffer holds, for its allocation's trace: the kind of
  // the op computing it ("parameter" or "constant" when it is a copy of
  // one) and its scope; the views point into `graph` and `steps`.
  std::vector<AllocationTag> output_tags;
};

// Verifies the graph (topological order, operand shapes, parameters),
// fuses elementwise trees, orders the kernels and plans the intermediates.
absl::StatusOr<std::unique_ptr<CompiledProgram>> CompileGraph(
    const Graph& graph);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COMPILER_COMPILER_H_
