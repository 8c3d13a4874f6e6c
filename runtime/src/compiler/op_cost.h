#ifndef PODSCOPE_RUNTIME_SRC_COMPILER_OP_COST_H_
#define PODSCOPE_RUNTIME_SRC_COMPILER_OP_COST_H_

// The arithmetic and memory traffic of one kernel, from shapes alone: what
// a trace's `flops` and `bytes_accessed` args report and what rooflines are
// drawn from. Floating-point operations count a multiply-add as 2:
//   dot                      2 * batch * m * n * k
//   conv2d and both of its gradients
//                            2 * N * O * OH * OW * C * KH * KW (the forward
//                            convolution's geometry)
//   elementwise ops          1 per output element (so a fusion of k ops
//                            costs k per element)
//   reduce_sum / reduce_max / argmax
//                            1 per input element; reduce_mean adds 1 per
//                            output element
//   max_pool2d               KH * KW comparisons per output element;
//                            max_pool2d_grad the same per pooled element
//   softmax, log_softmax     5 per element (max, subtract, exp, sum,
//                            divide or log)
//   cross_entropy_loss       log_softmax's 5 per score, plus 1 per sample
//   nll_loss                 1 per sample
//   dropout                  1 per element (the scaling)
//   all_reduce               1 per element
//   data movement (broadcast, reshape, transpose, slice, pad, concat),
//   one_hot, parameters and constants
//                            0
// Bytes accessed are the bytes of every operand read plus the result
// written (each once, as a kernel that streams them would).

#include <cstdint>

#include "absl/types/span.h"
#include "podscope/runtime/ir/ir.h"
#include "podscope/runtime/ir/shape.h"

namespace podscope::runtime::internal {

struct OpCost {
  int64_t flops = 0;
  int64_t bytes_accessed = 0;
};

// The cost of `node` computed on its own from `operand_shapes` (the shapes
// of node.operands, in order).
OpCost NodeCost(const Node& node,
                absl::Span<const Shape* const> operand_shapes);

// The cost of node `id` of `graph`.
OpCost NodeCost(const Graph& graph, int id);

// The floating-point operations of one elementwise op (or a broadcast
// inside a fusion, which is free) over `num_elements` elements.
int64_t ElementwiseFlops(OpKind op, int64_t num_elements);

}  // namespace podscope::runtime::internal

#endif  // PODSCOPE_RUNTIME_SRC_COMPILER_OP_COST_H_
