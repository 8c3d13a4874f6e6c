// Every differentiable op's gradient against central finite differences.

#include "podscope/runtime/ir/autodiff.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using testing::F32;
using testing::I32;
using testing::RandomF32;
using Fn = std::function<Value(GraphBuilder&, const std::vector<Value>&)>;

struct GradCase {
  std::string name;
  std::vector<Literal> inputs;
  std::vector<int> wrt;  // indices of the inputs to differentiate
  Fn f;
};

// Distinct values spaced far more than the finite-difference step apart,
// so max-like ops never switch winners during the check.
Literal Spaced(std::vector<int64_t> dims, std::mt19937& rng) {
  Literal literal(F32Shape(std::move(dims)));
  auto data = literal.mutable_data<float>();
  std::vector<int> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < data.size(); ++i) data[i] = 0.1f * order[i] - 1.0f;
  return literal;
}

// Uniform values in [lo, hi] with |x| >= 0.1 (away from relu's kink).
Literal AwayFromZero(std::vector<int64_t> dims, std::mt19937& rng) {
  Literal literal = RandomF32(std::move(dims), rng);
  for (float& v : literal.mutable_data<float>()) {
    v = v < 0 ? v - 0.1f : v + 0.1f;
  }
  return literal;
}

class AutodiffTest : public ::testing::TestWithParam<int> {};

// The loss is sum(f(inputs) * r) for fixed random r, so every output
// element contributes with a different weight.
void CheckGradient(Client& client, const GradCase& c, std::mt19937& rng) {
  SCOPED_TRACE(c.name);
  GraphBuilder b(c.name);
  std::vector<Value> params;
  for (const Literal& input : c.inputs)
    params.push_back(b.Parameter(input.shape()));
  Value out = c.f(b, params);
  ASSERT_TRUE(b.status().ok()) << b.status();
  const Shape out_shape = b.shape(out);
  Value weights = b.Constant(RandomF32(out_shape.dims(), rng, 0.5f, 1.5f));
  std::vector<int64_t> all(out_shape.rank());
  std::iota(all.begin(), all.end(), 0);
  Value loss = b.ReduceSum(b.Mul(out, weights), all);
  std::vector<Value> wrt;
  for (int i : c.wrt) wrt.push_back(params[i]);
  auto grads = Grad(b, loss, wrt);
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto loss_graph = b.Build({loss});
  ASSERT_TRUE(loss_graph.ok()) << loss_graph.status();
  auto grad_graph = b.Build(*grads);
  ASSERT_TRUE(grad_graph.ok()) << grad_graph.status();

  auto analytic = testing::Run(client, *grad_graph, c.inputs);
  ASSERT_TRUE(analytic.ok()) << analytic.status();
  auto eval = [&](const std::vector<Literal>& inputs) {
    auto result = testing::Run(client, *loss_graph, inputs);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? static_cast<double>((*result)[0].data<float>()[0])
                       : 0.0;
  };
  constexpr float kStep = 1e-2f;
  for (size_t k = 0; k < c.wrt.size(); ++k) {
    const int input = c.wrt[k];
    const Literal& grad = (*analytic)[k];
    ASSERT_EQ(grad.shape(), c.inputs[input].shape());
    std::vector<Literal> shifted = c.inputs;
    for (int64_t j = 0; j < c.inputs[input].shape().num_elements(); ++j) {
      float& x = shifted[input].mutable_data<float>()[j];
      const float original = x;
      x = original + kStep;
      const double plus = eval(shifted);
      x = original - kStep;
      const double minus = eval(shifted);
      x = original;
      const double numeric = (plus - minus) / (2 * kStep);
      const double exact = grad.data<float>()[j];
      EXPECT_NEAR(exact, numeric, 5e-3 + 1e-2 * std::abs(numeric))
          << "input " << input << " element " << j;
    }
  }
}

// The cases draw their inputs from one generator, in this order.
std::vector<GradCase> ElementwiseCases(std::mt19937& rng) {
  auto r = [&](std::vector<int64_t> dims) { return RandomF32(dims, rng); };
  auto pos = [&](std::vector<int64_t> dims) {
    return RandomF32(dims, rng, 0.5f, 2.0f);
  };
  Literal x = r({2, 3});
  Literal y = x;
  for (float& v : y.mutable_data<float>()) v += 0.3f;  // max: y always wins
  for (int i = 0; i < 3; ++i) y.mutable_data<float>()[i] -= 0.6f;  // x wins
  return {
      {"add",
       {r({2, 3}), r({2, 3})},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Add(p[0], p[1]); }},
      {"sub",
       {r({2, 3}), r({2, 3})},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Sub(p[0], p[1]); }},
      {"mul",
       {r({2, 3}), r({2, 3})},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Mul(p[0], p[1]); }},
      {"div",
       {r({2, 3}), pos({2, 3})},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Div(p[0], p[1]); }},
      {"max",
       {x, y},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Max(p[0], p[1]); }},
      {"neg",
       {r({4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.Neg(p[0]); }},
      {"exp",
       {r({4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.Exp(p[0]); }},
      {"log",
       {pos({4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.Log(p[0]); }},
      {"tanh",
       {r({4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.Tanh(p[0]); }},
      {"relu",
       {AwayFromZero({2, 4}, rng)},
       {0},
       [](GraphBuilder& b, auto p) { return b.Relu(p[0]); }},
      {"select",
       {AwayFromZero({5}, rng), r({5}), r({5})},
       {1, 2},
       [](GraphBuilder& b, auto p) {
         Value pred = b.Compare(p[0], b.ZerosLike(p[0]), CompareDirection::kGt);
         return b.Select(pred, p[1], p[2]);
       }},
      {"convert",
       {r({3})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Convert(p[0], ElementType::kF32);
       }},
  };
}

std::vector<GradCase> DataMovementCases(std::mt19937& rng) {
  auto r = [&](std::vector<int64_t> dims) { return RandomF32(dims, rng); };
  return {
      {"broadcast",
       {r({3})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Broadcast(p[0], {2, 3, 4}, {1});
       }},
      {"broadcast_size_one",
       {r({1, 3})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Broadcast(p[0], {4, 3}, {0, 1});
       }},
      {"broadcast_scalar",
       {r({})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.BroadcastTo(p[0], {2, 2});
       }},
      {"reshape",
       {r({2, 3})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Reshape(p[0], {3, 2});
       }},
      {"transpose",
       {r({2, 3, 4})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Transpose(p[0], {2, 0, 1});
       }},
      {"slice",
       {r({3, 4})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Slice(p[0], {1, 1}, {3, 3});
       }},
      {"pad",
       {r({2, 2})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.Pad(p[0], {1, 0}, {0, 2});
       }},
      {"concat",
       {r({2, 1}), r({2, 3})},
       {0, 1},
       [](GraphBuilder& b, auto p) {
         return b.Concat({p[0], p[1]}, 1);
       }},
  };
}

std::vector<GradCase> ReductionAndNeuralNetCases(std::mt19937& rng) {
  auto r = [&](std::vector<int64_t> dims) { return RandomF32(dims, rng); };
  return {
      {"reduce_sum",
       {r({2, 3, 2})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.ReduceSum(p[0], {0, 2});
       }},
      {"reduce_sum_keep",
       {r({2, 3})},
       {0},
       [](GraphBuilder& b, auto p) { return b.ReduceSum(p[0], {1}, true); }},
      {"reduce_max",
       {Spaced({3, 4}, rng)},
       {0},
       [](GraphBuilder& b, auto p) { return b.ReduceMax(p[0], {1}); }},
      {"reduce_mean",
       {r({3, 4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.ReduceMean(p[0], {0}); }},
      {"dot",
       {r({2, 3}), r({3, 4})},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Dot(p[0], p[1]); }},
      {"batched_dot",
       {r({2, 2, 3}), r({2, 3, 2})},
       {0, 1},
       [](GraphBuilder& b, auto p) { return b.Dot(p[0], p[1]); }},
      {"conv2d",
       {r({2, 2, 5, 5}), r({3, 2, 3, 3})},
       {0, 1},
       [](GraphBuilder& b, auto p) {
         return b.Conv2D(p[0], p[1], {2, 2}, {1, 1});
       }},
      {"max_pool2d",
       {Spaced({1, 2, 4, 4}, rng)},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.MaxPool2D(p[0], {2, 2});
       }},
      {"softmax",
       {r({3, 4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.Softmax(p[0], 0); }},
      {"log_softmax",
       {r({3, 4})},
       {0},
       [](GraphBuilder& b, auto p) { return b.LogSoftmax(p[0], 1); }},
      {"nll_loss",
       {r({3, 4}), I32({3}, {1, 0, 3})},
       {0},
       [](GraphBuilder& b, auto p) {
         return b.NllLoss(b.LogSoftmax(p[0]), p[1]);
       }},
      {"cross_entropy_loss",
       {r({3, 4}), I32({3}, {2, 2, 0})},
       {0},
       [](GraphBuilder& b, auto p) { return b.CrossEntropyLoss(p[0], p[1]); }},
      {"dropout",
       {r({4, 5}), I32({}, {1234})},
       {0},
       [](GraphBuilder& b, auto p) { return b.Dropout(p[0], p[1], 0.4f); }},
      {"two_dropouts_one_seed",  // different masks, each its own gradient
       {r({3, 4}), I32({}, {-7})},
       {0},
       [](GraphBuilder& b, auto p) {
         Value h = b.Tanh(b.Dropout(p[0], p[1], 0.3f));
         return b.Dropout(b.Mul(h, p[0]), p[1], 0.5f);
       }},
      {"mlp",
       {r({4, 3}), r({3, 5}), r({5}), r({5, 2}), I32({4}, {0, 1, 1, 0})},
       {1, 2, 3},
       [](GraphBuilder& b, auto p) {
         Value h = b.Dot(p[0], p[1]);
         h = b.Tanh(b.Add(h, b.BroadcastTo(p[2], {4, 5})));
         return b.CrossEntropyLoss(b.Dot(h, p[3]), p[4]);
       }},
  };
}

std::vector<GradCase> Cases() {
  std::mt19937 rng(7);
  std::vector<GradCase> cases = ElementwiseCases(rng);
  for (auto* more : {DataMovementCases, ReductionAndNeuralNetCases}) {
    std::vector<GradCase> next = more(rng);
    cases.insert(cases.end(), next.begin(), next.end());
  }
  return cases;
}

TEST_P(AutodiffTest, MatchesFiniteDifferences) {
  auto client = testing::MakeClient();
  std::mt19937 rng(GetParam());
  const std::vector<GradCase> cases = Cases();
  CheckGradient(*client, cases[GetParam()], rng);
}

INSTANTIATE_TEST_SUITE_P(AllOps, AutodiffTest,
                         ::testing::Range(0, static_cast<int>(Cases().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return Cases()[info.param].name;
                         });

TEST(AutodiffErrors, UnrelatedValuesGetZeroGradients) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({3}));
  Value unrelated = b.Parameter(F32Shape({2, 2}));
  Value loss = b.ReduceSum(b.Mul(x, x), {0});
  auto grads = Grad(b, loss, {x, unrelated});
  ASSERT_TRUE(grads.ok()) << grads.status();
  auto client = testing::MakeClient();
  auto graph = b.Build(*grads);
  ASSERT_TRUE(graph.ok());
  auto out = testing::Run(*client, *graph,
                          {F32({3}, {1, 2, 3}), Literal(F32Shape({2, 2}))});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ((*out)[1].ToVector<float>(), (std::vector<float>(4, 0.0f)));
}

TEST(AutodiffErrors, LossMustBeAScalar) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({3}));
  auto grads = Grad(b, b.Exp(x), {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_THAT(grads.status().message(),
              ::testing::HasSubstr("loss must be an f32 scalar, got f32[3]"));
}

TEST(AutodiffErrors, SecondOrderThroughConvIsUnimplemented) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({1, 1, 4, 4}));
  Value w = b.Parameter(F32Shape({1, 1, 3, 3}));
  Value loss = b.ReduceSum(b.Conv2D(x, w), {0, 1, 2, 3});
  auto first = Grad(b, loss, {x});
  ASSERT_TRUE(first.ok());
  auto second = Grad(b, b.ReduceSum((*first)[0], {0, 1, 2, 3}), {w});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(second.status().message(),
              ::testing::HasSubstr("conv2d_backprop_input"));
}

}  // namespace
}  // namespace podscope::runtime
