// The compiler: executable cache, elementwise fusion, buffer planning and
// verification.

#include <random>

#include "compiler/buffer_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using testing::AllClose;
using testing::F32;
using ::testing::HasSubstr;
using testing::RandomF32;

Graph ScaleGraph(std::vector<int64_t> dims, float factor) {
  GraphBuilder b("scale");
  Value x = b.Parameter(F32Shape(dims));
  return b.Build({b.Mul(x, b.Full(F32Shape(dims), factor))}).value();
}

TEST(CompileCacheTest, RepeatedGraphIsAHitChangedGraphIsAMiss) {
  auto client = testing::MakeClient();
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto first,
                                client->Compile(ScaleGraph({4}, 2)));
  // Built again from scratch: structurally equal, so the same executable.
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto again,
                                client->Compile(ScaleGraph({4}, 2)));
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(client->compile_cache_stats().hits, 1);
  EXPECT_EQ(client->compile_cache_stats().misses, 1);

  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto other_shape,
                                client->Compile(ScaleGraph({5}, 2)));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto other_constant,
                                client->Compile(ScaleGraph({4}, 3)));
  EXPECT_NE(other_shape.get(), first.get());
  EXPECT_NE(other_constant.get(), first.get());
  EXPECT_NE(other_constant->fingerprint(), first->fingerprint());
  const CompileCacheStats stats = client->compile_cache_stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 3);
  EXPECT_EQ(stats.entries, 3);
}

TEST(FusionTest, ElementwiseChainRunsAsOneKernelWithoutScratch) {
  auto client = testing::MakeClient();
  GraphBuilder b("chain");
  Value x = b.Parameter(F32Shape({100000}));
  Value bias = b.Parameter(F32Shape({100000}));
  Value y =
      b.Exp(b.Relu(b.Add(b.Mul(x, b.Full(F32Shape({100000}), 0.5f)), bias)));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({y}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));
  const CompileStats& stats = executable->stats();
  EXPECT_EQ(stats.num_kernels, 1);
  EXPECT_EQ(stats.num_fusions, 1);
  EXPECT_EQ(stats.num_fused_ops, 5);  // splat, mul, add, relu, exp
  // Intermediates never reach memory: one pass reads x and bias, writes y.
  EXPECT_EQ(stats.intermediate_bytes, 0);
  EXPECT_EQ(stats.unplanned_intermediate_bytes, 0);

  std::mt19937 rng(1);
  Literal xs = RandomF32({100000}, rng);
  Literal bs = RandomF32({100000}, rng);
  Device* device = client->addressable_devices()[0];
  auto xb = client->BufferFromLiteral(xs, device).value();
  auto bb = client->BufferFromLiteral(bs, device).value();
  ASSERT_TRUE(xb->Await().ok() && bb->Await().ok());
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  const int64_t before = device->GetMemoryStats()->bytes_in_use;
  auto out = executable->Execute({xb, bb}, device).value();
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Literal result, out[0]->ToLiteral().Await());
  // The only device memory the execution added is its output.
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  EXPECT_EQ(device->GetMemoryStats()->bytes_in_use, before + 400000);
  std::vector<float> expected;
  for (int i = 0; i < 100000; ++i) {
    expected.push_back(std::exp(
        std::max(0.0f, xs.data<float>()[i] * 0.5f + bs.data<float>()[i])));
  }
  EXPECT_TRUE(AllClose(result.ToVector<float>(), expected, 1e-6f));
}

TEST(FusionTest, ValuesNeededOutsideTheChainAreNotFusedAway) {
  auto client = testing::MakeClient();
  GraphBuilder b("shared");
  Value x = b.Parameter(F32Shape({3}));
  Value square = b.Mul(x, x);
  Value sum = b.ReduceSum(square, {0});  // a second, non-elementwise user
  Value out = b.Exp(square);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({out, sum, square}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));
  EXPECT_EQ(executable->stats().num_kernels, 3);
  EXPECT_EQ(executable->stats().num_fusions, 0);
  auto results = testing::Run(*client, graph, {F32({3}, {1, 2, 3})});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_TRUE(AllClose((*results)[0].ToVector<float>(),
                       {std::exp(1.0f), std::exp(4.0f), std::exp(9.0f)}));
  EXPECT_EQ((*results)[1].ToVector<float>(), std::vector<float>{14});
  EXPECT_EQ((*results)[2].ToVector<float>(), (std::vector<float>{1, 4, 9}));
}

TEST(FusionTest, DiamondInsideAChainFuses) {
  auto client = testing::MakeClient();
  GraphBuilder b("diamond");
  Value x = b.Parameter(F32Shape({4}));
  Value t = b.Exp(x);
  Value y = b.Add(b.Mul(t, t), t);  // t has two users, both in the chain
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({y}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));
  EXPECT_EQ(executable->stats().num_kernels, 1);
  auto results = testing::Run(*client, graph, {F32({4}, {0, 1, -1, 0.5f})});
  ASSERT_TRUE(results.ok());
  std::vector<float> expected;
  for (float v : {0.0f, 1.0f, -1.0f, 0.5f}) {
    expected.push_back(std::exp(v) * std::exp(v) + std::exp(v));
  }
  EXPECT_TRUE(AllClose((*results)[0].ToVector<float>(), expected, 1e-6f));
}

TEST(BufferPlanTest, ChainOfMatmulsReusesTwoSlots) {
  auto client = testing::MakeClient();
  GraphBuilder b("matmuls");
  Value x = b.Parameter(F32Shape({32, 32}));
  Value w = b.Parameter(F32Shape({32, 32}));
  Value h = x;
  for (int i = 0; i < 6; ++i) h = b.Dot(h, w);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({h}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));
  const CompileStats& stats = executable->stats();
  EXPECT_EQ(stats.num_kernels, 6);
  // Five intermediates, each dead once the next product exists.
  EXPECT_EQ(stats.unplanned_intermediate_bytes, 5 * 4096);
  EXPECT_EQ(stats.num_buffer_slots, 2);
  EXPECT_EQ(stats.intermediate_bytes, 2 * 4096);

  std::mt19937 rng(3);
  Literal xs = RandomF32({32, 32}, rng);
  Literal ws = RandomF32({32, 32}, rng, -0.3f, 0.3f);
  auto results = testing::Run(*client, graph, {xs, ws});
  ASSERT_TRUE(results.ok()) << results.status();
  std::vector<float> ref = xs.ToVector<float>();
  for (int step = 0; step < 6; ++step) {
    std::vector<float> next(32 * 32, 0);
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j)
        for (int k = 0; k < 32; ++k)
          next[i * 32 + j] += ref[i * 32 + k] * ws.data<float>()[k * 32 + j];
    ref = next;
  }
  EXPECT_TRUE(AllClose((*results)[0].ToVector<float>(), ref, 1e-4f));
}

TEST(BufferPlanTest, LiveValuesNeverShareMemory) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<internal::PlanRequest> requests;
    for (int step = 0; step < 30; ++step) {
      const int last = step + static_cast<int>(rng() % 6);
      requests.push_back({static_cast<int64_t>(1 + rng() % 5000), step, last});
    }
    const internal::BufferPlan plan = internal::PlanBuffers(requests);
    for (size_t a = 0; a < requests.size(); ++a) {
      EXPECT_LE(plan.offsets[a] + requests[a].bytes, plan.arena_bytes);
      for (size_t c = a + 1; c < requests.size(); ++c) {
        // c is produced while a is still needed (or by a's last reader).
        const bool overlap_in_time = requests[c].def <= requests[a].last_use;
        const bool overlap_in_memory =
            plan.offsets[a] < plan.offsets[c] + requests[c].bytes &&
            plan.offsets[c] < plan.offsets[a] + requests[a].bytes;
        EXPECT_FALSE(overlap_in_time && overlap_in_memory)
            << "trial " << trial << " values " << a << " and " << c;
      }
    }
    EXPECT_LE(plan.arena_bytes, plan.unplanned_bytes);
  }
}

TEST(CompilerTest, OutputsMayBeParametersOrRepeated) {
  auto client = testing::MakeClient();
  GraphBuilder b("passthrough");
  Value x = b.Parameter(F32Shape({2}));
  Value y = b.Neg(x);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({x, y, y}));
  auto results = testing::Run(*client, graph, {F32({2}, {1, -2})});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].ToVector<float>(), (std::vector<float>{1, -2}));
  EXPECT_EQ((*results)[1].ToVector<float>(), (std::vector<float>{-1, 2}));
  EXPECT_EQ((*results)[2].ToVector<float>(), (std::vector<float>{-1, 2}));
}

TEST(CompilerTest, VerifierRejectsAMalformedGraph) {
  auto client = testing::MakeClient();
  GraphBuilder b("bad");
  Value x = b.Parameter(F32Shape({2, 3}));
  Graph good = b.Build({b.Transpose(x, {1, 0})}).value();
  std::vector<Node> nodes = good.nodes();
  nodes[1].shape = F32Shape({2, 3});  // transpose result declared wrongly
  Graph bad("bad", nodes, good.parameters(), good.outputs());
  auto executable = client->Compile(bad);
  ASSERT_FALSE(executable.ok());
  EXPECT_THAT(executable.status().message(),
              HasSubstr("node %1 (transpose) declares f32[2,3] but computes "
                        "f32[3,2]"));
}

}  // namespace
}  // namespace podscope::runtime
