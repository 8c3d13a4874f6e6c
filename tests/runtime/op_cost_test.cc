// The cost of each IR op from its shapes (op_cost.h), against values worked
// out by hand, and the per-kernel costs the compiler attaches to its steps.

#include "compiler/op_cost.h"

#include "compiler/compiler.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using internal::NodeCost;
using internal::OpCost;

// The cost of the last node of a graph built by `build`.
OpCost CostOfLast(const std::function<Value(GraphBuilder&)>& build) {
  GraphBuilder b("cost");
  Value out = build(b);
  absl::StatusOr<Graph> graph = b.Build({out});
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  return NodeCost(*graph, static_cast<int>(graph->nodes().size()) - 1);
}

TEST(OpCost, Dot) {
  const OpCost cost = CostOfLast([](GraphBuilder& b) {
    return b.Dot(b.Parameter(F32Shape({64, 32})),
                 b.Parameter(F32Shape({32, 16})));
  });
  EXPECT_EQ(cost.flops, 2 * 64 * 16 * 32);
  EXPECT_EQ(cost.bytes_accessed, (64 * 32 + 32 * 16 + 64 * 16) * 4);
}

TEST(OpCost, BatchedDot) {
  const OpCost cost = CostOfLast([](GraphBuilder& b) {
    return b.Dot(b.Parameter(F32Shape({3, 5, 7})),
                 b.Parameter(F32Shape({3, 7, 2})));
  });
  EXPECT_EQ(cost.flops, 2 * 3 * 5 * 2 * 7);
  EXPECT_EQ(cost.bytes_accessed, (3 * 5 * 7 + 3 * 7 * 2 + 3 * 5 * 2) * 4);
}

TEST(OpCost, Conv2DAndItsGradients) {
  // N=2, C=3, 8x8, O=4, 3x3 kernel, stride 1, padding 1: OH = OW = 8.
  const int64_t flops = 2 * 2 * 4 * 8 * 8 * 3 * 3 * 3;
  const OpCost forward = CostOfLast([](GraphBuilder& b) {
    return b.Conv2D(b.Parameter(F32Shape({2, 3, 8, 8})),
                    b.Parameter(F32Shape({4, 3, 3, 3})), {1, 1}, {1, 1});
  });
  EXPECT_EQ(forward.flops, flops);
  EXPECT_EQ(forward.bytes_accessed,
            (2 * 3 * 8 * 8 + 4 * 3 * 3 * 3 + 2 * 4 * 8 * 8) * 4);
  const OpCost input = CostOfLast([](GraphBuilder& b) {
    return b.Conv2DBackpropInput(b.Parameter(F32Shape({2, 4, 8, 8})),
                                 b.Parameter(F32Shape({4, 3, 3, 3})),
                                 F32Shape({2, 3, 8, 8}), {1, 1}, {1, 1});
  });
  EXPECT_EQ(input.flops, flops);
  const OpCost filter = CostOfLast([](GraphBuilder& b) {
    return b.Conv2DBackpropFilter(b.Parameter(F32Shape({2, 3, 8, 8})),
                                  b.Parameter(F32Shape({2, 4, 8, 8})),
                                  F32Shape({4, 3, 3, 3}), {1, 1}, {1, 1});
  });
  EXPECT_EQ(filter.flops, flops);
  EXPECT_EQ(filter.bytes_accessed, forward.bytes_accessed);
  // Strided, unpadded: 2x1x9x9 input, 5x1x3x3 weights, stride 2 -> 4x4.
  const OpCost strided = CostOfLast([](GraphBuilder& b) {
    return b.Conv2D(b.Parameter(F32Shape({2, 1, 9, 9})),
                    b.Parameter(F32Shape({5, 1, 3, 3})), {2, 2}, {0, 0});
  });
  EXPECT_EQ(strided.flops, 2 * 2 * 5 * 4 * 4 * 1 * 3 * 3);
}

TEST(OpCost, ElementwiseReductionsAndMovement) {
  const OpCost add = CostOfLast([](GraphBuilder& b) {
    return b.Add(b.Parameter(F32Shape({10, 10})),
                 b.Parameter(F32Shape({10, 10})));
  });
  EXPECT_EQ(add.flops, 100);
  EXPECT_EQ(add.bytes_accessed, 300 * 4);
  const OpCost sum = CostOfLast([](GraphBuilder& b) {
    return b.ReduceSum(b.Parameter(F32Shape({6, 4})), {1});
  });
  EXPECT_EQ(sum.flops, 24);
  EXPECT_EQ(sum.bytes_accessed, (24 + 6) * 4);
  const OpCost mean = CostOfLast([](GraphBuilder& b) {
    return b.ReduceMean(b.Parameter(F32Shape({6, 4})), {1});
  });
  EXPECT_EQ(mean.flops, 24 + 6);
  const OpCost transpose = CostOfLast([](GraphBuilder& b) {
    return b.Transpose(b.Parameter(F32Shape({6, 4})), {1, 0});
  });
  EXPECT_EQ(transpose.flops, 0);
  EXPECT_EQ(transpose.bytes_accessed, 48 * 4);
}

TEST(OpCost, PoolingSoftmaxAndLosses) {
  // 2x3x8x8 pooled 2x2 -> 2x3x4x4: 4 comparisons per output.
  const OpCost pool = CostOfLast([](GraphBuilder& b) {
    return b.MaxPool2D(b.Parameter(F32Shape({2, 3, 8, 8})), {2, 2});
  });
  EXPECT_EQ(pool.flops, 2 * 3 * 4 * 4 * 4);
  EXPECT_EQ(pool.bytes_accessed, (2 * 3 * 8 * 8 + 2 * 3 * 4 * 4) * 4);
  const OpCost pool_grad = CostOfLast([](GraphBuilder& b) {
    return b.MaxPool2DGrad(b.Parameter(F32Shape({2, 3, 8, 8})),
                           b.Parameter(F32Shape({2, 3, 4, 4})), {2, 2}, {2, 2},
                           {0, 0});
  });
  EXPECT_EQ(pool_grad.flops, 2 * 3 * 4 * 4 * 4);
  const OpCost softmax = CostOfLast([](GraphBuilder& b) {
    return b.Softmax(b.Parameter(F32Shape({8, 10})));
  });
  EXPECT_EQ(softmax.flops, 5 * 80);
  const OpCost loss = CostOfLast([](GraphBuilder& b) {
    return b.CrossEntropyLoss(b.Parameter(F32Shape({8, 10})),
                              b.Parameter(I32Shape({8})));
  });
  EXPECT_EQ(loss.flops, 5 * 80 + 8);
  EXPECT_EQ(loss.bytes_accessed, (80 + 8 + 1) * 4);
  const OpCost nll = CostOfLast([](GraphBuilder& b) {
    return b.NllLoss(b.Parameter(F32Shape({8, 10})),
                     b.Parameter(I32Shape({8})));
  });
  EXPECT_EQ(nll.flops, 8);
}

// A fused tree counts one flop per elementwise op per element, and reads
// its inputs and writes its root once.
TEST(OpCost, CompiledStepsCarryTheirCosts) {
  GraphBuilder b("steps");
  Value x = b.Parameter(F32Shape({4, 8}));
  Value w = b.Parameter(F32Shape({8, 16}));
  Value bias = b.Parameter(F32Shape({4, 16}));
  Value out = b.Exp(b.Relu(b.Add(b.Dot(x, w), bias)));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({out}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto program, internal::CompileGraph(graph));
  ASSERT_EQ(program->steps.size(), 2u);
  const internal::Step& dot = program->steps[0];
  EXPECT_EQ(dot.op_name, "dot");
  EXPECT_EQ(dot.flops, 2 * 4 * 16 * 8);
  EXPECT_EQ(dot.bytes_accessed, (4 * 8 + 8 * 16 + 4 * 16) * 4);
  const internal::Step& fusion = program->steps[1];
  EXPECT_EQ(fusion.op_name, "fusion");
  EXPECT_EQ(fusion.num_ops, 3);
  EXPECT_EQ(fusion.flops, 3 * 64);
  EXPECT_EQ(fusion.bytes_accessed, 3 * 64 * 4);  // dot result, bias, out
  // The output buffer is tagged with the op computing it.
  ASSERT_EQ(program->output_tags.size(), 1u);
  EXPECT_EQ(program->output_tags[0].op, "fusion");
}

}  // namespace
}  // namespace podscope::runtime
