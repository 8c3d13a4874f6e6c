// Sharded vs unsharded: the partitioned program, run on four devices of
// one process, computes what the unsharded program computes on one device,
// including shapes that the mesh does not divide, gradients and a small
// training step of a conv net.
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/autodiff.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/spmd.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using testing::AllClose;
using testing::RandomF32;

class SpmdNumericsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::MakeClient(4);
    ASSERT_NE(client_, nullptr);
    mesh_ = std::make_shared<const Mesh>(
        Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, *client_)
            .value());
    executor_ = SpmdExecutor::Create(client_.get(), mesh_).value();
  }

  Sharding S(const PartitionSpec& spec) {
    return Sharding::Create(mesh_, spec, static_cast<int>(spec.size())).value();
  }

  // Runs `graph` unsharded and partitioned; expects equal outputs.
  void ExpectSame(const Graph& graph, const std::vector<Literal>& args,
                  const std::vector<std::optional<Sharding>>& shardings,
                  float tolerance = 1e-4f) {
    auto expected = testing::Run(*client_, graph, args);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto program = SpmdProgram::Partition(graph, mesh_, shardings);
    ASSERT_TRUE(program.ok()) << program.status();
    std::vector<ShardedValue> sharded;
    for (size_t i = 0; i < args.size(); ++i) {
      auto v = executor_->Shard(
          args[i], (*program)->parameter_sharding(static_cast<int>(i)));
      ASSERT_TRUE(v.ok()) << v.status();
      sharded.push_back(*std::move(v));
    }
    auto outs = executor_->Execute(**program, sharded);
    ASSERT_TRUE(outs.ok()) << outs.status() << "\n" << (*program)->ToString();
    ASSERT_EQ(outs->size(), expected->size());
    for (size_t i = 0; i < outs->size(); ++i) {
      auto got = executor_->Gather((*outs)[i]);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->shape(), (*expected)[i].shape());
      if (got->shape().element_type() != ElementType::kF32) {
        EXPECT_EQ(got->ToVector<int32_t>(), (*expected)[i].ToVector<int32_t>());
        continue;
      }
      EXPECT_TRUE(AllClose(got->ToVector<float>(),
                           (*expected)[i].ToVector<float>(), tolerance))
          << "output " << i << " of\n"
          << (*program)->ToString();
    }
  }

  std::unique_ptr<Client> client_;
  std::shared_ptr<const Mesh> mesh_;
  std::unique_ptr<SpmdExecutor> executor_;
};

TEST_F(SpmdNumericsTest, UnevenElementwiseReductionsAndDots) {
  std::mt19937 rng(1);
  GraphBuilder b("uneven");
  Value x = b.Parameter(F32Shape({5, 7}));
  Value y = b.Parameter(F32Shape({7, 3}));
  Value e = b.Exp(b.Mul(x, x));  // padding becomes exp(0) = 1, not 0
  Value sum0 = b.ReduceSum(e, {0});
  Value mean1 = b.ReduceMean(e, {1});
  Value max0 = b.ReduceMax(b.Neg(e), {0});
  Value dot = b.Dot(e, y);
  Value all = b.ReduceMean(e, {0, 1});
  auto graph = b.Build({sum0, mean1, max0, dot, all}).value();
  ExpectSame(graph, {RandomF32({5, 7}, rng), RandomF32({7, 3}, rng)},
             {S({{"data"}, {"model"}}), S({{"model"}, {}})});
  ExpectSame(graph, {RandomF32({5, 7}, rng), RandomF32({7, 3}, rng)},
             {S({{"data", "model"}, {}}), S({{}, {"data"}})});
  ExpectSame(graph, {RandomF32({5, 7}, rng), RandomF32({7, 3}, rng)},
             {S({{}, {"model", "data"}}), std::nullopt});
}

TEST_F(SpmdNumericsTest, RandomProgramsAndShardings) {
  std::mt19937 rng(7);
  const std::vector<PartitionSpec> specs = {{{}, {}},
                                            {{"data"}, {}},
                                            {{}, {"model"}},
                                            {{"data"}, {"model"}},
                                            {{"model"}, {"data"}},
                                            {{"data", "model"}, {}},
                                            {{}, {"data", "model"}}};
  for (int trial = 0; trial < 12; ++trial) {
    std::uniform_int_distribution<int64_t> dim(1, 9);
    const int64_t m = dim(rng), k = dim(rng), n = dim(rng);
    GraphBuilder b("random");
    Value a = b.Parameter(F32Shape({m, k}));
    Value w = b.Parameter(F32Shape({k, n}));
    Value c = b.Parameter(F32Shape({m, n}));
    Value h = b.Dot(a, w);
    switch (trial % 4) {
      case 0:
        h = b.Relu(b.Add(h, c));
        break;
      case 1:
        h = b.Tanh(b.Sub(h, b.Exp(c)));
        break;
      case 2:
        h = b.Max(b.Mul(h, c), b.Transpose(b.Transpose(c, {1, 0}), {1, 0}));
        break;
      default:
        h = b.LogSoftmax(b.Add(h, c), 1);
        break;
    }
    Value loss = b.ReduceMean(b.Mul(h, h), {0, 1});
    auto grads = Grad(b, loss, {a, w, c}).value();
    Value rows = b.ReduceSum(h, {1});
    auto graph = b.Build({loss, rows, grads[0], grads[1], grads[2]}).value();
    std::uniform_int_distribution<size_t> pick(0, specs.size() - 1);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " m=" << m
                                      << " k=" << k << " n=" << n);
    ExpectSame(graph,
               {RandomF32({m, k}, rng), RandomF32({k, n}, rng),
                RandomF32({m, n}, rng)},
               {S(specs[pick(rng)]), S(specs[pick(rng)]), S(specs[pick(rng)])});
  }
}

TEST_F(SpmdNumericsTest, ConvNetTrainingStepMatches) {
  // A small version of the seed's model with its shardings; batch 6 over
  // 4 devices does not divide.
  std::mt19937 rng(3);
  const int64_t batch = 6;
  GraphBuilder b("convnet");
  Value x = b.Parameter(F32Shape({batch, 1, 8, 8}));
  Value labels = b.Parameter(I32Shape({batch}));
  Value w1 = b.Parameter(F32Shape({4, 1, 3, 3}));
  Value b1 = b.Parameter(F32Shape({4}));
  Value w2 = b.Parameter(F32Shape({36, 6}));
  Value w3 = b.Parameter(F32Shape({6, 5}));
  Value h =
      b.Relu(b.Add(b.Conv2D(x, w1), b.Broadcast(b1, {batch, 4, 6, 6}, {1})));
  h = b.MaxPool2D(h, {2, 2});
  h = b.Reshape(h, {batch, 36});
  h = b.Relu(b.Dot(h, w2));
  Value logp = b.LogSoftmax(b.Dot(h, w3), 1);
  Value loss = b.NllLoss(logp, labels);
  auto grads = Grad(b, loss, {w1, b1, w2, w3}).value();
  std::vector<Value> outs = {loss};
  std::vector<Value> params = {w1, b1, w2, w3};
  for (size_t i = 0; i < params.size(); ++i) {
    outs.push_back(
        b.Sub(params[i], b.Mul(grads[i], b.Full(b.shape(params[i]), 0.1f))));
  }
  auto graph = b.Build(outs).value();
  Literal labels_literal(I32Shape({batch}));
  for (int i = 0; i < batch; ++i)
    labels_literal.mutable_data<int32_t>()[i] = i % 5;
  std::vector<Literal> args = {
      RandomF32({batch, 1, 8, 8}, rng), labels_literal,
      RandomF32({4, 1, 3, 3}, rng),     RandomF32({4}, rng),
      RandomF32({36, 6}, rng),          RandomF32({6, 5}, rng)};
  ExpectSame(graph, args,
             {S({{"data", "model"}, {}, {}, {}}), S({{"data", "model"}}),
              S({{"data"}, {}, {}, {}}), std::nullopt, S({{"data"}, {}}),
              S({{"data"}, {"model"}})});
  // Model-parallel flavour: batch on 'data', features on 'model'.
  ExpectSame(
      graph, args,
      {S({{"data"}, {}, {}, {}}), S({{"data"}}), S({{"model"}, {}, {}, {}}),
       S({{"model"}}), S({{}, {"model"}}), S({{"model"}, {}})});
}

}  // namespace
}  // namespace podscope::runtime
