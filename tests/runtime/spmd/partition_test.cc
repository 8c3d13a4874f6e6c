// Sharding propagation and collective insertion against hand-worked cases:
// the sharding chosen for each node and each collective inserted (kind and
// the sharding change that caused it), one rule at a time.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/spmd.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::shared_ptr<const Mesh> Mesh22() {
  return std::make_shared<const Mesh>(
      Mesh::Create({0, 1, 2, 3}, {2, 2}, {"data", "model"}, 4).value());
}

Sharding S(const PartitionSpec& spec) {
  return Sharding::Create(Mesh22(), spec, static_cast<int>(spec.size()))
      .value();
}

// The sharding the program chose for node `id` (its listing line).
std::string StateOf(const SpmdProgram& p, int id) {
  for (absl::string_view line : absl::StrSplit(p.ToString(), '\n')) {
    std::vector<std::string> parts =
        absl::StrSplit(line, absl::MaxSplits(' ', 3));
    if (parts.size() == 4 && parts[0] == absl::StrCat("%", id)) return parts[3];
  }
  return "?";
}

std::vector<std::string> Kinds(const SpmdProgram& p) {
  std::vector<std::string> kinds;
  for (const auto& c : p.collectives()) kinds.push_back(c.kind);
  return kinds;
}

std::shared_ptr<const SpmdProgram> Part(
    const GraphBuilder& b, std::vector<Value> outs,
    std::vector<std::optional<Sharding>> params,
    std::vector<std::string> names = {}, std::map<int, Sharding> ann = {}) {
  auto graph = b.Build(outs);
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto p = SpmdProgram::Partition(*graph, Mesh22(), std::move(params),
                                  std::move(ann), std::move(names));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : nullptr;
}

TEST(PropagationTest, ElementwiseFollowsTheTiledOperand) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  Value y = b.Parameter(F32Shape({8, 6}));
  Value z = b.Relu(b.Add(x, y));
  auto p = Part(b, {z}, {S({{"data"}, {}}), std::nullopt});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, z.id), "('data', None)");
  // y is replicated: each device slices its rows, no collective.
  EXPECT_THAT(p->collectives(), IsEmpty());
}

TEST(PropagationTest, ConflictingElementwiseOperandsAreGathered) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  Value y = b.Parameter(F32Shape({8, 6}));
  Value z = b.Mul(x, y);
  auto p =
      Part(b, {z}, {S({{"data"}, {"model"}}), S({{"model"}, {}})}, {"x", "y"});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, z.id), "('data', 'model')");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_gather"}));
  EXPECT_EQ(p->collectives()[0].reason,
            "y: ('model', None) -> ('data', 'model') for mul");
  EXPECT_EQ(p->collectives()[0].group_size, 2);
}

TEST(PropagationTest, ReductionOverATiledDimIsPartialThenAllReduced) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  Value s = b.ReduceSum(x, {0});
  Value m = b.ReduceMax(x, {1});
  auto p = Part(b, {s, m}, {S({{"data"}, {"model"}})}, {"x"});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, s.id), "('model',) partial('data')");
  EXPECT_EQ(StateOf(*p, m.id), "('data',) partial-max('model')");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_reduce", "all_reduce"}));
  EXPECT_THAT(p->collectives()[0].reason,
              HasSubstr("('model',) partial('data') -> ('model',) for the "
                        "output"));
}

TEST(PropagationTest, DotRowAndColumnShardingsCarry) {
  GraphBuilder b;
  Value a = b.Parameter(F32Shape({8, 4}));
  Value w = b.Parameter(F32Shape({4, 6}));
  Value y = b.Dot(a, w);
  auto p = Part(b, {y}, {S({{"data"}, {}}), S({{}, {"model"}})});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, y.id), "('data', 'model')");
  EXPECT_THAT(p->collectives(), IsEmpty());
}

TEST(PropagationTest, DotContractionIsPartialSum) {
  GraphBuilder b;
  Value a = b.Parameter(F32Shape({8, 4}));
  Value w = b.Parameter(F32Shape({4, 6}));
  Value y = b.Dot(a, w);
  auto p = Part(b, {y}, {S({{}, {"model"}}), std::nullopt});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, y.id), "replicated partial('model')");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_reduce"}));
}

TEST(PropagationTest, SeedsFc2WeightIsGatheredOnData) {
  // h ('data', None) @ fc2.weight ('data', 'model'): 'data' already tiles
  // the rows, so the weight's rows are gathered.
  GraphBuilder b;
  Value h = b.Parameter(F32Shape({8, 128}));
  Value w = b.Parameter(F32Shape({128, 10}));
  Value y = b.Dot(h, w);
  auto p = Part(b, {y}, {S({{"data"}, {}}), S({{"data"}, {"model"}})},
                {"h", "fc2.weight"});
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_gather"}));
  EXPECT_EQ(p->collectives()[0].reason,
            "fc2.weight: ('data', 'model') -> (None, 'model') for dot");
  EXPECT_EQ(StateOf(*p, y.id), "('data', 'model')");
  // 64x5 floats of the other 'data' half arrive.
  EXPECT_EQ(p->collectives()[0].bytes, 64 * 5 * 4);
}

TEST(PropagationTest, ReshapeCarriesMajorDimensionsWhenEven) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  Value split = b.Reshape(x, {8, 2, 3});
  Value flat = b.Reshape(x, {48});
  auto p = Part(b, {split, flat}, {S({{"data"}, {}})});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, split.id), "('data', None, None)");
  EXPECT_EQ(StateOf(*p, flat.id), "('data',)");
  EXPECT_THAT(p->collectives(), IsEmpty());

  GraphBuilder c;
  Value y = c.Parameter(F32Shape({6, 8}));
  Value yflat = c.Reshape(y, {48});
  auto q = Part(c, {yflat}, {S({{}, {"data"}})}, {"y"});
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(StateOf(*q, yflat.id), "replicated");
  ASSERT_EQ(Kinds(*q), (std::vector<std::string>{"all_gather"}));
  EXPECT_EQ(q->collectives()[0].reason,
            "y: (None, 'data') -> replicated for reshape");
}

TEST(PropagationTest, TransposePermutesAndSoftmaxAxisIsGathered) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  Value t = b.Transpose(x, {1, 0});
  Value s = b.Softmax(t, 1);
  auto p = Part(b, {s}, {S({{"data"}, {"model"}})}, {"x"});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, t.id), "('model', 'data')");
  EXPECT_EQ(StateOf(*p, s.id), "('model', None)");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_gather"}));
}

TEST(PropagationTest, ConvKeepsBatchAndGathersConflictingWeights) {
  // The seed's conv: input batch on ('data', 'model'), weights on 'data'.
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 1, 6, 6}));
  Value w = b.Parameter(F32Shape({4, 1, 3, 3}));
  Value y = b.Conv2D(x, w);
  auto p = Part(b, {y},
                {S({{"data", "model"}, {}, {}, {}}), S({{"data"}, {}, {}, {}})},
                {"input", "conv1.weight"});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, y.id), "(('data', 'model'), None, None, None)");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_gather"}));
  EXPECT_EQ(p->collectives()[0].reason,
            "conv1.weight: ('data', None, None, None) -> replicated for "
            "conv2d");

  // Output features shard when the batch does not use the axis.
  GraphBuilder c;
  Value x2 = c.Parameter(F32Shape({8, 1, 6, 6}));
  Value w2 = c.Parameter(F32Shape({4, 1, 3, 3}));
  Value y2 = c.Conv2D(x2, w2);
  auto q =
      Part(c, {y2}, {S({{"data"}, {}, {}, {}}), S({{"model"}, {}, {}, {}})});
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(StateOf(*q, y2.id), "('data', 'model', None, None)");
  EXPECT_THAT(q->collectives(), IsEmpty());
}

TEST(PropagationTest, FilterGradientOverTheBatchIsReduceScattered) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 2, 6, 6}));
  Value g = b.Parameter(F32Shape({8, 4, 4, 4}));
  Value dw =
      b.Conv2DBackpropFilter(x, g, F32Shape({4, 2, 3, 3}), {1, 1}, {0, 0});
  std::map<int, Sharding> ann;
  ann.emplace(dw.id, S({{"data"}, {}, {}, {}}));
  auto p = Part(b, {dw}, {S({{"data"}, {}, {}, {}}), S({{"data"}, {}, {}, {}})},
                {"x", "grad"}, ann);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"reduce_scatter"}));
  EXPECT_THAT(p->collectives()[0].reason,
              HasSubstr("replicated partial('data') -> ('data', None, None, "
                        "None) for MarkSharding"));
  EXPECT_EQ(StateOf(*p, dw.id), "('data', None, None, None)");
}

TEST(PropagationTest, BroadcastCarriesEqualDimensionsAndNllIsPartial) {
  GraphBuilder b;
  Value logits = b.Parameter(F32Shape({8, 10}));
  Value bias = b.Parameter(F32Shape({10}));
  Value labels = b.Parameter(I32Shape({8}));
  Value z = b.Add(logits, b.BroadcastTo(bias, {8, 10}));
  Value loss = b.NllLoss(b.LogSoftmax(z, 1), labels);
  auto p = Part(b, {loss}, {S({{"data"}, {}}), std::nullopt, S({{"data"}})});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, z.id), "('data', None)");
  EXPECT_EQ(StateOf(*p, loss.id), "replicated partial('data')");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_reduce"}));
}

TEST(PropagationTest, UnsupportedOpsRunReplicated) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  Value s = b.Slice(x, {0, 0}, {4, 6});
  auto p = Part(b, {s}, {S({{"data"}, {}})}, {"x"});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(StateOf(*p, s.id), "replicated");
  ASSERT_EQ(Kinds(*p), (std::vector<std::string>{"all_gather"}));
  EXPECT_EQ(p->collectives()[0].reason,
            "x: ('data', None) -> replicated for slice");
}

TEST(PropagationTest, RejectsShardingsThatDoNotFit) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({8, 6}));
  auto graph = b.Build({b.Neg(x)}).value();
  auto p =
      SpmdProgram::Partition(graph, Mesh22(), {S({{"data"}})}, {}, {"weights"});
  EXPECT_THAT(p.status().message(),
              HasSubstr("weights has shape f32[8,6] but its sharding "
                        "('data',) has 1 entries"));
  auto other = std::make_shared<const Mesh>(
      Mesh::Create({3, 2, 1, 0}, {4}, {"data"}, 4).value());
  auto q = SpmdProgram::Partition(
      graph, Mesh22(), {Sharding::Create(other, {{"data"}, {}}, 2).value()});
  EXPECT_THAT(q.status().message(), HasSubstr("sharded over another mesh"));
  EXPECT_THAT(q.status().message(),
              HasSubstr("lay the devices out differently"));
}

TEST(PropagationTest, EquivalentMeshesTranslate) {
  // The seed's two meshes: (2,2,1,1) and (2,2) over the same devices.
  auto conv = std::make_shared<const Mesh>(
      Mesh::Create({0, 1, 2, 3}, {2, 2, 1, 1}, {"data", "dim1", "dim2", "dim3"},
                   4)
          .value());
  auto linear = Sharding::Create(Mesh22(), {{"data"}, {"model"}}, 2).value();
  auto t = TranslateSharding(linear, conv);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->SpecString(), "('data', 'dim1')");
}

}  // namespace
}  // namespace podscope::runtime
