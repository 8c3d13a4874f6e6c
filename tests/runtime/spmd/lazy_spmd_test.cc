// SPMD through lazy tensors, as the seed's user writes it: one context for
// the whole mesh, MarkSharding on the input batch and the weights, the
// same training code as on one device. Three SGD steps of a small MLP on a
// 2 x 2 mesh with a batch that does not divide evenly match the
// single-device run, the step's program is partitioned once and reused, and
// each device computes its shard.
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/spmd.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

struct StepResult {
  std::vector<float> losses;
  std::vector<float> w1, w2;
};

// `mesh` null: the single-device run.
StepResult Train(Client* client, std::shared_ptr<const Mesh> mesh) {
  std::shared_ptr<LazyContext> ctx =
      mesh ? LazyContext::CreateSpmd(client, mesh).value()
           : LazyContext::Create(client, client->addressable_devices()[0])
                 .value();
  std::mt19937 rng(11);
  const Literal x_data = testing::RandomF32({5, 10}, rng);
  Tensor w1 = ctx->FromLiteral(testing::RandomF32({10, 6}, rng));
  Tensor w2 = ctx->FromLiteral(testing::RandomF32({6, 3}, rng));
  StepResult out;
  for (int step = 0; step < 3; ++step) {
    Tensor x = ctx->FromLiteral(x_data);
    if (mesh) {
      EXPECT_TRUE(MarkSharding(x, *mesh, {{"data"}, {}}).ok());
      EXPECT_TRUE(MarkSharding(w1, *mesh, {{}, {"model"}}).ok());
      EXPECT_TRUE(MarkSharding(w2, *mesh, {{"model"}, {}}).ok());
    }
    Tensor loss = Mean(Tanh(Matmul(Relu(Matmul(x, w1)), w2)), {0, 1});
    auto grads = Grad(loss, {w1, w2});
    EXPECT_TRUE(grads.ok()) << grads.status();
    if (!grads.ok()) return out;
    w1 = w1 - (*grads)[0] * 0.5f;
    w2 = w2 - (*grads)[1] * 0.5f;
    EXPECT_TRUE(ctx->Sync().ok());
    auto value = loss.Item();
    EXPECT_TRUE(value.ok()) << value.status();
    out.losses.push_back(value.value_or(0));
  }
  out.w1 = w1.ToVector<float>().value();
  out.w2 = w2.ToVector<float>().value();
  if (mesh) {
    EXPECT_EQ(ctx->spmd_partitions(), 1) << "one partition, reused";
    // The step ran partitioned: the marks are its parameters' shardings
    // (x, w1, w2 in the order the step read them), and the partitioner
    // inserted collectives where they meet.
    std::shared_ptr<const SpmdProgram> program = ctx->last_spmd_program();
    EXPECT_NE(program, nullptr);
    if (program != nullptr) {
      EXPECT_EQ(program->parameter_sharding(0).SpecString(), "('data', None)");
      EXPECT_EQ(program->parameter_sharding(1).SpecString(), "(None, 'model')");
      EXPECT_EQ(program->parameter_sharding(2).SpecString(), "('model', None)");
      EXPECT_FALSE(program->collectives().empty());
    }
  }
  return out;
}

// Four devices as a 2 x 2 mesh of "data" by "model".
std::shared_ptr<const Mesh> DataModelMesh(const Client& client) {
  return std::make_shared<const Mesh>(
      Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, client).value());
}

TEST(LazySpmdTest, TrainingOnAMeshMatchesOneDevice) {
  UseSpmd();
  auto client = testing::MakeClient(4);
  ASSERT_NE(client, nullptr);
  auto mesh = DataModelMesh(*client);
  const StepResult single = Train(client.get(), nullptr);
  const StepResult spmd = Train(client.get(), mesh);
  ASSERT_EQ(spmd.losses.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(spmd.losses[i], single.losses[i], 1e-5) << "step " << i;
  }
  EXPECT_NE(single.losses[0], single.losses[2]) << "the weights learn";
  ASSERT_EQ(spmd.w1.size(), single.w1.size());
  for (size_t i = 0; i < spmd.w1.size(); ++i) {
    EXPECT_NEAR(spmd.w1[i], single.w1[i], 1e-5);
  }
  for (size_t i = 0; i < spmd.w2.size(); ++i) {
    EXPECT_NEAR(spmd.w2[i], single.w2[i], 1e-5);
  }
}

TEST(LazySpmdTest, ShardingsAreKeptAndBadUseIsRejected) {
  UseSpmd();
  auto client = testing::MakeClient(4);
  ASSERT_NE(client, nullptr);
  auto mesh = DataModelMesh(*client);
  auto ctx = LazyContext::CreateSpmd(client.get(), mesh).value();
  EXPECT_EQ(ctx->mesh(), mesh.get());
  std::mt19937 rng(3);
  const Literal data = testing::RandomF32({4, 6}, rng);
  Tensor x = ctx->FromLiteral(data);
  ASSERT_TRUE(MarkSharding(x, *mesh, {{"data"}, {"model"}}).ok());
  Tensor y = x * 2.0f;
  ASSERT_TRUE(MarkSharding(y, *mesh, {{"data"}, {"model"}}).ok());
  ASSERT_TRUE(ctx->Sync().ok());
  ASSERT_TRUE(ShardingSpecOf(y).has_value());
  EXPECT_EQ(ShardingSpecOf(y)->SpecString(), "('data', 'model')");
  // Read back whole.
  const std::vector<float> got = y.ToVector<float>().value();
  const std::vector<float> want = data.ToVector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], 2 * want[i]);
  // Buffers of one device do not belong in a mesh-wide context.
  Tensor bad = ctx->FromBuffer(
      client->BufferFromLiteral(data, client->addressable_devices()[0])
          .value());
  EXPECT_FALSE(bad.status().ok());
  EXPECT_NE(bad.status().message().find("SPMD"), std::string::npos);
  // A mesh over devices this process does not hold.
  auto other = testing::MakeClient(1);
  EXPECT_FALSE(LazyContext::CreateSpmd(other.get(), mesh).ok());
}

}  // namespace
}  // namespace podscope::runtime
