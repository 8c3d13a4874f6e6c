// Meshes, partition specs, shard geometry and the lazy-tensor annotations:
// what a user sees, including the errors for bad meshes and specs.
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/spmd.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using testing::F32;
using ::testing::HasSubstr;

TEST(MeshTest, LaysDevicesOutRowMajor) {
  absl::StatusOr<Mesh> mesh =
      Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, 4);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->Coordinates(2), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(mesh->AxisIndex("model"), 1);
  EXPECT_EQ(mesh->AxisIndex("nope"), -1);
  EXPECT_EQ(mesh->PositionOf(3), 3);
  EXPECT_EQ(mesh->ToString(),
            "shape=(2,2) axes=('data','model') devices=[0,1,2,3]");
}

TEST(MeshTest, RejectsBadMeshesNamingTheProblem) {
  auto dup = Mesh::Create({0, 1, 1, 3}, {2, 2}, {"data", "model"}, 4);
  EXPECT_THAT(dup.status().message(), HasSubstr("device id 1 appears more"));
  auto product = Mesh::Create({0, 1, 2}, {2, 2}, {"data", "model"}, 4);
  EXPECT_THAT(product.status().message(),
              HasSubstr("holds 4 devices but 3 device ids"));
  auto names = Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "data"}, 4);
  EXPECT_THAT(names.status().message(), HasSubstr("'data' is used twice"));
  auto missing = Mesh::Create({0, 1, 2, 7}, {2, 2}, {"data", "model"}, 4);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("device id 7 does not exist (the job has 4 devices"));
  auto count = Mesh::Create({0, 1}, {2}, {"data", "model"}, 4);
  EXPECT_THAT(count.status().message(), HasSubstr("but 2 axis names"));
}

TEST(MeshTest, ClientMeshCountsTheJobsDevices) {
  auto client = testing::MakeClient(2);
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(Mesh::Create({0, 1}, {2}, {"data"}, *client).ok());
  auto bad = Mesh::Create({0, 1, 2, 3}, {4}, {"data"}, *client);
  EXPECT_THAT(bad.status().message(), HasSubstr("device id 2 does not exist"));
}

std::shared_ptr<const Mesh> Mesh22() {
  return std::make_shared<const Mesh>(
      Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, 4).value());
}

TEST(ShardingTest, SpecsAndKinds) {
  auto mesh = Mesh22();
  auto tiled = Sharding::Create(mesh, {{"data"}, {"model"}}, 2).value();
  EXPECT_EQ(tiled.SpecString(), "('data', 'model')");
  EXPECT_EQ(tiled.Kind(), "tiled");
  auto partial = Sharding::Create(mesh, {{"data"}, {}}, 2).value();
  EXPECT_EQ(partial.SpecString(), "('data', None)");
  EXPECT_EQ(partial.Kind(), "partially replicated");
  auto tuple = Sharding::Create(mesh, {{"data", "model"}, {}}, 2).value();
  EXPECT_EQ(tuple.SpecString(), "(('data', 'model'), None)");
  EXPECT_EQ(tuple.Kind(), "tiled");
  EXPECT_EQ(tuple.NumShards(0), 4);
  EXPECT_EQ(Sharding::Create(mesh, {{}, {}}, 2)->Kind(), "replicated");
}

TEST(ShardingTest, RejectsBadSpecsNamingThem) {
  auto mesh = Mesh22();
  auto unknown = Sharding::Create(mesh, {{"batch"}, {}}, 2);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("unknown mesh axis 'batch' (the mesh has 'data', "
                        "'model')"));
  auto twice = Sharding::Create(mesh, {{"data"}, {"data"}}, 2);
  EXPECT_THAT(twice.status().message(),
              HasSubstr("mesh axis 'data' is used more than once"));
  auto rank = Sharding::Create(mesh, {{"data"}}, 2);
  EXPECT_THAT(rank.status().message(),
              HasSubstr("the spec has 1 entries but the tensor has rank 2"));
}

TEST(ShardingTest, CeilDividedShardsArePadded) {
  auto mesh = Mesh22();
  auto s = Sharding::Create(mesh, {{"data", "model"}, {}}, 2).value();
  Literal global = F32({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_EQ(s.ShardShape(global.shape()), F32Shape({2, 2}));
  EXPECT_EQ(ExtractShard(global, s, 2).ToVector<float>(),
            (std::vector<float>{8, 9, 0, 0}));
  EXPECT_EQ(ExtractShard(global, s, 3).ToVector<float>(),
            (std::vector<float>{0, 0, 0, 0}));
  Literal back(global.shape());
  for (int p = 0; p < 4; ++p)
    InsertShard(ExtractShard(global, s, p), s, p, back);
  EXPECT_EQ(back.ToVector<float>(), global.ToVector<float>());
}

TEST(ShardingTest, MarkShardingOnLazyTensors) {
  auto client = testing::MakeClient(1);
  ASSERT_NE(client, nullptr);
  auto ctx = LazyContext::Create(client.get(), client->addressable_devices()[0])
                 .value();
  Tensor t = ctx->FromLiteral(F32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  Mesh mesh = *Mesh22();
  UseSpmd();
  ASSERT_TRUE(MarkSharding(t, mesh, {{"data"}, {}}).ok());
  ASSERT_TRUE(ShardingSpecOf(t).has_value());
  EXPECT_EQ(ShardingSpecOf(t)->SpecString(), "('data', None)");
  absl::Status bad = MarkSharding(t, mesh, {{"data"}, {"data"}});
  EXPECT_THAT(bad.message(), HasSubstr("MarkSharding on f32[4,2]"));
  EXPECT_THAT(bad.message(), HasSubstr("'data' is used more than once"));
  // A rejected spec leaves the earlier annotation.
  EXPECT_EQ(ShardingSpecOf(t)->SpecString(), "('data', None)");
  EXPECT_THAT(MarkSharding(t, mesh, {{"x"}, {}}).message(),
              HasSubstr("unknown mesh axis 'x'"));
  EXPECT_THAT(MarkSharding(t, mesh, {{}}).message(),
              HasSubstr("1 entries but the tensor has rank 2"));
  ClearSharding(t);
  EXPECT_FALSE(ShardingSpecOf(t).has_value());
}

}  // namespace
}  // namespace podscope::runtime
