// Shape inference and the errors users see for ill-shaped graphs.

#include "podscope/runtime/ir/builder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/scope.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(BuilderTest, InfersShapesOfEveryOpFamily) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({2, 3}));
  Value w = b.Parameter(F32Shape({3, 4}));
  EXPECT_EQ(b.shape(b.Add(x, x)), F32Shape({2, 3}));
  EXPECT_EQ(b.shape(b.Compare(x, x, CompareDirection::kLt)), PredShape({2, 3}));
  EXPECT_EQ(b.shape(b.Dot(x, w)), F32Shape({2, 4}));
  EXPECT_EQ(b.shape(b.Transpose(x, {1, 0})), F32Shape({3, 2}));
  EXPECT_EQ(b.shape(b.Reshape(x, {3, -1})), F32Shape({3, 2}));
  EXPECT_EQ(b.shape(b.Slice(x, {0, 1}, {2, 3})), F32Shape({2, 2}));
  EXPECT_EQ(b.shape(b.Pad(x, {1, 0}, {0, 2})), F32Shape({3, 5}));
  EXPECT_EQ(b.shape(b.Concat({x, x}, 1)), F32Shape({2, 6}));
  EXPECT_EQ(b.shape(b.ReduceSum(x, {1})), F32Shape({2}));
  EXPECT_EQ(b.shape(b.ReduceMax(x, {0}, true)), F32Shape({1, 3}));
  EXPECT_EQ(b.shape(b.ArgMax(x, -1)), I32Shape({2}));
  EXPECT_EQ(b.shape(b.BroadcastTo(b.ScalarF32(1), {4, 2})), F32Shape({4, 2}));
  EXPECT_EQ(b.shape(b.Broadcast(b.Parameter(F32Shape({3})), {2, 3, 5}, {1})),
            F32Shape({2, 3, 5}));
  Value batch = b.Parameter(F32Shape({5, 2, 3}));
  EXPECT_EQ(b.shape(b.Dot(batch, b.Parameter(F32Shape({5, 3, 7})))),
            F32Shape({5, 2, 7}));
  Value image = b.Parameter(F32Shape({8, 1, 28, 28}));
  Value conv = b.Conv2D(image, b.Parameter(F32Shape({32, 1, 3, 3})));
  EXPECT_EQ(b.shape(conv), F32Shape({8, 32, 26, 26}));
  EXPECT_EQ(b.shape(b.Conv2D(image, b.Parameter(F32Shape({4, 1, 5, 5})), {2, 2},
                             {2, 2})),
            F32Shape({8, 4, 14, 14}));
  EXPECT_EQ(b.shape(b.MaxPool2D(conv, {2, 2})), F32Shape({8, 32, 13, 13}));
  Value labels = b.Parameter(I32Shape({2}));
  EXPECT_EQ(b.shape(b.OneHot(labels, 3)), F32Shape({2, 3}));
  EXPECT_EQ(b.shape(b.CrossEntropyLoss(x, labels)), F32Shape({}));
  EXPECT_EQ(b.shape(b.NllLoss(b.LogSoftmax(x), labels)), F32Shape({}));
  EXPECT_TRUE(b.status().ok()) << b.status();
}

TEST(BuilderTest, ElementwiseMismatchNamesOpAndShapes) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({2, 3}));
  Value y = b.Parameter(F32Shape({3, 2}));
  EXPECT_FALSE(b.Add(x, y).valid());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      b.status().message(),
      AllOf(HasSubstr("add"), HasSubstr("f32[2,3]"), HasSubstr("f32[3,2]")));
}

TEST(BuilderTest, DotMismatchNamesOpAndShapes) {
  GraphBuilder b;
  b.Dot(b.Parameter(F32Shape({2, 3})), b.Parameter(F32Shape({4, 5})));
  EXPECT_THAT(b.status().message(),
              AllOf(HasSubstr("dot"), HasSubstr("f32[2,3]"),
                    HasSubstr("f32[4,5]"), HasSubstr("3 vs 4")));
}

TEST(BuilderTest, ConvChannelMismatchNamesOpAndShapes) {
  GraphBuilder b;
  b.Conv2D(b.Parameter(F32Shape({1, 3, 8, 8})),
           b.Parameter(F32Shape({4, 2, 3, 3})));
  EXPECT_THAT(b.status().message(),
              AllOf(HasSubstr("conv2d"), HasSubstr("f32[1,3,8,8]"),
                    HasSubstr("f32[4,2,3,3]"), HasSubstr("channels")));
}

TEST(BuilderTest, OtherShapeErrors) {
  struct Case {
    const char* expected;
    std::function<void(GraphBuilder&)> record;
  };
  const std::vector<Case> cases = {
      {"reshape: cannot reshape 6 elements to [4]",
       [](GraphBuilder& b) {
         b.Reshape(b.Parameter(F32Shape({2, 3})), {4});
       }},
      {"transpose: [0,0] is not a permutation",
       [](GraphBuilder& b) {
         b.Transpose(b.Parameter(F32Shape({2, 3})), {0, 0});
       }},
      {"slice: slice [0,2] to [2,4] is out of bounds",
       [](GraphBuilder& b) {
         b.Slice(b.Parameter(F32Shape({2, 3})), {0, 2}, {2, 4});
       }},
      {"reduce_sum: invalid or repeated axis 2",
       [](GraphBuilder& b) {
         b.ReduceSum(b.Parameter(F32Shape({2, 3})), {2});
       }},
      {"broadcast: cannot broadcast to [2,4]",
       [](GraphBuilder& b) {
         b.Broadcast(b.Parameter(F32Shape({3})), {2, 4}, {1});
       }},
      {"exp: unsupported element type i32",
       [](GraphBuilder& b) { b.Exp(b.Parameter(I32Shape({2}))); }},
      {"select: the predicate must be pred",
       [](GraphBuilder& b) {
         Value x = b.Parameter(F32Shape({2}));
         b.Select(x, x, x);
       }},
      {"concat: operands differ outside axis 0",
       [](GraphBuilder& b) {
         b.Concat(
             {b.Parameter(F32Shape({2, 3})), b.Parameter(F32Shape({2, 4}))}, 0);
       }},
      {"nll_loss: expects f32[n,classes] scores and i32[n] labels",
       [](GraphBuilder& b) {
         b.NllLoss(b.Parameter(F32Shape({4, 3})), b.Parameter(I32Shape({5})));
       }},
      {"max_pool2d: window exceeds input",
       [](GraphBuilder& b) {
         b.MaxPool2D(b.Parameter(F32Shape({1, 1, 2, 2})), {3, 3});
       }},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    c.record(b);
    EXPECT_THAT(b.status().message(), HasSubstr(c.expected));
  }
}

TEST(BuilderTest, FirstErrorIsKeptAndBuildReportsIt) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({2}));
  Value bad = b.Add(x, b.Parameter(F32Shape({3})));
  Value worse = b.Exp(bad);  // uses the invalid value: no new error
  EXPECT_FALSE(worse.valid());
  EXPECT_THAT(b.status().message(), HasSubstr("add"));
  auto graph = b.Build({x});
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("add"));
  EXPECT_FALSE(b.TakeStatus().ok());
  EXPECT_TRUE(b.status().ok());
  EXPECT_TRUE(b.Build({b.Neg(x)}).ok());
}

TEST(BuilderTest, NodesRecordTheScopeTheyWereRecordedIn) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({2}));
  Value y;
  {
    ScopedName forward("forward");
    ScopedName layer("fc1");
    y = b.Relu(x);
    EXPECT_EQ(CurrentScope(), "forward/fc1");
  }
  EXPECT_EQ(CurrentScope(), "");
  Value z = b.Neg(y);
  EXPECT_EQ(b.node(y).scope, "forward/fc1");
  EXPECT_EQ(b.node(z).scope, "");
}

TEST(BuilderTest, BuildKeepsParametersAndDropsDeadNodes) {
  GraphBuilder b("dead");
  Value x = b.Parameter(F32Shape({2}));
  Value unused = b.Parameter(F32Shape({3}));
  b.Exp(x);  // dead
  Value y = b.Neg(x);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({y}));
  EXPECT_EQ(graph.nodes().size(), 3u);
  EXPECT_EQ(graph.parameters().size(), 2u);
  EXPECT_EQ(graph.node(graph.parameters()[1]).shape, b.shape(unused));
  EXPECT_THAT(graph.ToString(), HasSubstr("neg f32[2]"));
}

TEST(BuilderTest, FingerprintIsStructural) {
  auto build = [](float constant, const char* name) {
    GraphBuilder b(name);
    Value x = b.Parameter(F32Shape({2}));
    return b.Build({b.Mul(x, b.Full(F32Shape({2}), constant))}).value();
  };
  EXPECT_EQ(build(2, "a").fingerprint(), build(2, "b").fingerprint());
  EXPECT_NE(build(2, "a").fingerprint(), build(3, "a").fingerprint());
}

}  // namespace
}  // namespace podscope::runtime
