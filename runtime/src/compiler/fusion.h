#ifndef PODSCOPE_RUNTIME_SRC_COMPILER_FUSION_H_
#define PODSCOPE_RUNTIME_SRC_COMPILER_FUSION_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "podscope/runtime/ir/ir.h"

namespace podscope::runtime::internal {

class IntraOpPool;

// One op of a fused elementwise kernel. Operand o >= 0 is the result of
// instruction o; o < 0 is fusion input -(o + 1).
struct FusedInstr {
  OpKind op;  // an elementwise op, or kBroadcast of a one-element input
  CompareDirection direction = CompareDirection::kEq;
  ElementType type = ElementType::kF32;          // result
  ElementType operand_type = ElementType::kF32;  // of the first operand
  int num_operands = 0;
  std::array<int, 3> operands = {0, 0, 0};
};

// A tree of elementwise ops over one shape, run as a single pass: the
// inputs are read once and only the root is written to memory, while the
// intermediates live in small per-thread tiles.
struct FusedProgram {
  std::vector<int> inputs;         // graph node ids
  std::vector<FusedInstr> instrs;  // topological; the last is the root
  std::vector<int> members;        // graph node ids, parallel to instrs
  int64_t num_elements = 0;
};

// Partitions the fusible nodes (elementwise ops and broadcasts of one
// element) into trees whose interior nodes are used only inside the tree
// and are not graph outputs. Returns one program per tree.
std::vector<FusedProgram> FormFusions(const Graph& graph);

absl::Status RunFused(const FusedProgram& program,
                      absl::Span<const void* const> inputs, void* output,
                      const IntraOpPool& pool);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COMPILER_FUSION_H_
