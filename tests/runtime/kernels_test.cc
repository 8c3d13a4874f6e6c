// Every kernel against a naive reference implementation.

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using testing::AllClose;
using testing::F32;
using testing::I32;
using testing::RandomF32;

class KernelsTest : public ::testing::Test {
 protected:
  // Runs a graph with one output and returns it.
  Literal RunOne(GraphBuilder& b, Value out, const std::vector<Literal>& args) {
    auto graph = b.Build({out});
    EXPECT_TRUE(graph.ok()) << graph.status();
    auto results = testing::Run(*client_, *graph, args);
    EXPECT_TRUE(results.ok()) << results.status();
    return results.ok() ? std::move((*results)[0]) : Literal();
  }

  std::unique_ptr<Client> client_ = testing::MakeClient();
  std::mt19937 rng_{42};
};

std::vector<float> Zip(const Literal& x, const Literal& y,
                       const std::function<float(float, float)>& f) {
  std::vector<float> out;
  for (size_t i = 0; i < x.data<float>().size(); ++i) {
    out.push_back(f(x.data<float>()[i], y.data<float>()[i]));
  }
  return out;
}

TEST_F(KernelsTest, ElementwiseOpsSmallAndLarge) {
  // The large size spans many tiles and the parallel path.
  for (int64_t n : {int64_t{7}, int64_t{100003}}) {
    Literal x = RandomF32({n}, rng_, 0.1f, 2.0f);
    Literal y = RandomF32({n}, rng_, -2.0f, 2.0f);
    using Op = std::function<Value(GraphBuilder&, Value, Value)>;
    const std::vector<std::pair<Op, std::function<float(float, float)>>> ops = {
        {&GraphBuilder::Add, [](float a, float b) { return a + b; }},
        {&GraphBuilder::Sub, [](float a, float b) { return a - b; }},
        {&GraphBuilder::Mul, [](float a, float b) { return a * b; }},
        {&GraphBuilder::Div, [](float a, float b) { return a / b; }},
        {&GraphBuilder::Max, [](float a, float b) { return std::max(a, b); }},
        {[](GraphBuilder& b, Value a, Value) { return b.Neg(a); },
         [](float a, float) { return -a; }},
        {[](GraphBuilder& b, Value a, Value) { return b.Exp(a); },
         [](float a, float) { return std::exp(a); }},
        {[](GraphBuilder& b, Value a, Value) { return b.Log(a); },
         [](float a, float) { return std::log(a); }},
        {[](GraphBuilder& b, Value, Value c) { return b.Tanh(c); },
         [](float, float c) { return std::tanh(c); }},
        {[](GraphBuilder& b, Value, Value c) { return b.Relu(c); },
         [](float, float c) { return std::max(c, 0.0f); }},
    };
    for (size_t i = 0; i < ops.size(); ++i) {
      GraphBuilder b;
      Value px = b.Parameter(x.shape());
      Value py = b.Parameter(y.shape());
      Literal out = RunOne(b, ops[i].first(b, px, py), {x, y});
      EXPECT_TRUE(
          AllClose(out.ToVector<float>(), Zip(x, y, ops[i].second), 2e-6f))
          << "op " << i << " n=" << n;
    }
  }
}

TEST_F(KernelsTest, CompareSelectAndConvert) {
  Literal x = F32({6}, {1, 2, 3, 4, 5, 6});
  Literal y = F32({6}, {6, 2, 4, 4, 1, 7});
  const std::vector<std::pair<CompareDirection, std::vector<uint8_t>>> cases = {
      {CompareDirection::kEq, {0, 1, 0, 1, 0, 0}},
      {CompareDirection::kNe, {1, 0, 1, 0, 1, 1}},
      {CompareDirection::kLt, {1, 0, 1, 0, 0, 1}},
      {CompareDirection::kLe, {1, 1, 1, 1, 0, 1}},
      {CompareDirection::kGt, {0, 0, 0, 0, 1, 0}},
      {CompareDirection::kGe, {0, 1, 0, 1, 1, 0}},
  };
  for (const auto& [direction, expected] : cases) {
    GraphBuilder b;
    Value px = b.Parameter(x.shape());
    Value py = b.Parameter(y.shape());
    Value pred = b.Compare(px, py, direction);
    auto graph = b.Build(
        {pred, b.Select(pred, px, py), b.Convert(pred, ElementType::kI32)});
    ASSERT_TRUE(graph.ok()) << graph.status();
    auto out = testing::Run(*client_, *graph, {x, y});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].ToVector<uint8_t>(), expected);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ((*out)[1].data<float>()[i],
                expected[i] ? x.data<float>()[i] : y.data<float>()[i]);
      EXPECT_EQ((*out)[2].data<int32_t>()[i], expected[i]);
    }
  }
}

TEST_F(KernelsTest, IntegerArithmetic) {
  GraphBuilder b;
  Value x = b.Parameter(I32Shape({4}));
  Value y = b.Parameter(I32Shape({4}));
  Value out = b.Relu(b.Sub(b.Mul(x, y), b.Max(x, y)));
  Literal r =
      RunOne(b, out, {I32({4}, {1, -2, 3, 4}), I32({4}, {5, 6, -7, 8})});
  // max(x*y - max(x,y), 0)
  EXPECT_EQ(r.ToVector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 24}));
}

TEST_F(KernelsTest, DataMovement) {
  Literal x = RandomF32({2, 3, 4}, rng_);
  const auto v = x.data<float>();
  auto at = [&](int i, int j, int k) { return v[(i * 3 + j) * 4 + k]; };
  {
    GraphBuilder b;
    Literal out =
        RunOne(b, b.Transpose(b.Parameter(x.shape()), {2, 0, 1}), {x});
    ASSERT_EQ(out.shape(), F32Shape({4, 2, 3}));
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          EXPECT_EQ(out.data<float>()[(k * 2 + i) * 3 + j], at(i, j, k));
  }
  {
    GraphBuilder b;
    Literal out =
        RunOne(b, b.Slice(b.Parameter(x.shape()), {1, 1, 0}, {2, 3, 3}), {x});
    ASSERT_EQ(out.shape(), F32Shape({1, 2, 3}));
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(out.data<float>()[j * 3 + k], at(1, j + 1, k));
  }
  {
    GraphBuilder b;
    Literal out =
        RunOne(b, b.Pad(b.Parameter(x.shape()), {0, 1, 2}, {1, 0, 0}), {x});
    ASSERT_EQ(out.shape(), F32Shape({3, 4, 6}));
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 6; ++k) {
          const bool inside = i < 2 && j >= 1 && k >= 2;
          EXPECT_EQ(out.data<float>()[(i * 4 + j) * 6 + k],
                    inside ? at(i, j - 1, k - 2) : 0.0f);
        }
  }
  {
    GraphBuilder b;
    Value p = b.Parameter(x.shape());
    Literal out = RunOne(b, b.Concat({p, b.Neg(p)}, 1), {x});
    ASSERT_EQ(out.shape(), F32Shape({2, 6, 4}));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 6; ++j)
        for (int k = 0; k < 4; ++k)
          EXPECT_EQ(out.data<float>()[(i * 6 + j) * 4 + k],
                    j < 3 ? at(i, j, k) : -at(i, j - 3, k));
  }
  {
    GraphBuilder b;
    Literal row = F32({3}, {1, 2, 3});
    Literal out =
        RunOne(b, b.Broadcast(b.Parameter(row.shape()), {2, 3, 2}, {1}), {row});
    EXPECT_EQ(out.ToVector<float>(),
              (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  }
  {
    GraphBuilder b;
    Literal out = RunOne(b, b.Reshape(b.Parameter(x.shape()), {4, 6}), {x});
    EXPECT_EQ(out.shape(), F32Shape({4, 6}));
    EXPECT_EQ(out.ToVector<float>(), x.ToVector<float>());
  }
}

TEST_F(KernelsTest, Reductions) {
  Literal x = RandomF32({3, 4, 5}, rng_);
  const auto v = x.data<float>();
  std::vector<float> sum(4, 0), max(4, -1e9f), mean(4, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) {
        const float e = v[(i * 4 + j) * 5 + k];
        sum[j] += e;
        max[j] = std::max(max[j], e);
      }
  for (int j = 0; j < 4; ++j) mean[j] = sum[j] / 15;
  std::vector<int32_t> argmax;
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k) {
      int best = 0;
      for (int j = 1; j < 4; ++j)
        if (v[(i * 4 + j) * 5 + k] > v[(i * 4 + best) * 5 + k]) best = j;
      argmax.push_back(best);
    }
  GraphBuilder b;
  Value p = b.Parameter(x.shape());
  auto graph = b.Build({b.ReduceSum(p, {0, 2}), b.ReduceMax(p, {2, 0}, true),
                        b.ReduceMean(p, {0, 2}), b.ArgMax(p, 1)});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto out = testing::Run(*client_, *graph, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(AllClose((*out)[0].ToVector<float>(), sum, 1e-5f));
  EXPECT_EQ((*out)[1].shape(), F32Shape({1, 4, 1}));
  EXPECT_TRUE(AllClose((*out)[1].ToVector<float>(), max, 0));
  EXPECT_TRUE(AllClose((*out)[2].ToVector<float>(), mean, 1e-5f));
  EXPECT_EQ((*out)[3].ToVector<int32_t>(), argmax);

  GraphBuilder ib;
  Literal ints = I32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(RunOne(ib, ib.ReduceSum(ib.Parameter(ints.shape()), {0, 1}), {ints})
                .ToVector<int32_t>(),
            std::vector<int32_t>{21});
}

std::vector<float> NaiveMatmul(const float* a, const float* b, int m, int k,
                               int n) {
  std::vector<float> c(m * n, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = static_cast<float>(acc);
    }
  return c;
}

TEST_F(KernelsTest, DotSmallLargeAndBatched) {
  for (auto [m, k, n] : {std::tuple{2, 3, 4}, std::tuple{64, 128, 96}}) {
    Literal a = RandomF32({m, k}, rng_);
    Literal w = RandomF32({k, n}, rng_);
    GraphBuilder b;
    Value pa = b.Parameter(a.shape());
    Value pw = b.Parameter(w.shape());
    Literal out = RunOne(b, b.Dot(pa, pw), {a, w});
    EXPECT_TRUE(AllClose(
        out.ToVector<float>(),
        NaiveMatmul(a.data<float>().data(), w.data<float>().data(), m, k, n),
        1e-4f));
  }
  Literal a = RandomF32({6, 3, 5}, rng_);
  Literal w = RandomF32({6, 5, 2}, rng_);
  GraphBuilder b;
  Value pa = b.Parameter(a.shape());
  Value pw = b.Parameter(w.shape());
  Literal out = RunOne(b, b.Dot(pa, pw), {a, w});
  std::vector<float> expected;
  for (int i = 0; i < 6; ++i) {
    auto c = NaiveMatmul(a.data<float>().data() + i * 15,
                         w.data<float>().data() + i * 10, 3, 5, 2);
    expected.insert(expected.end(), c.begin(), c.end());
  }
  EXPECT_TRUE(AllClose(out.ToVector<float>(), expected, 1e-5f));
}

struct Conv {
  int n, c, h, w, o, kh, kw, s, p;
  int oh() const { return (h + 2 * p - kh) / s + 1; }
  int ow() const { return (w + 2 * p - kw) / s + 1; }
  // Calls f(n, o, y, x, c, i, j, input_y, input_x) for every in-bounds tap.
  template <typename F>
  void ForEachTap(F f) const {
    for (int b = 0; b < n; ++b)
      for (int oc = 0; oc < o; ++oc)
        for (int y = 0; y < oh(); ++y)
          for (int x = 0; x < ow(); ++x)
            for (int ic = 0; ic < c; ++ic)
              for (int i = 0; i < kh; ++i)
                for (int j = 0; j < kw; ++j) {
                  const int iy = y * s - p + i, ix = x * s - p + j;
                  if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                    f(b, oc, y, x, ic, i, j, iy, ix);
                  }
                }
  }
};

TEST_F(KernelsTest, Conv2DAndItsGradientsMatchNaiveLoops) {
  const Conv g{3, 2, 7, 6, 4, 3, 2, 2, 1};
  Literal x = RandomF32({g.n, g.c, g.h, g.w}, rng_);
  Literal w = RandomF32({g.o, g.c, g.kh, g.kw}, rng_);
  Literal dy = RandomF32({g.n, g.o, g.oh(), g.ow()}, rng_);
  auto X = [&](int b, int c, int y, int x_) {
    return x.data<float>()[((b * g.c + c) * g.h + y) * g.w + x_];
  };
  auto W = [&](int o, int c, int i, int j) {
    return w.data<float>()[((o * g.c + c) * g.kh + i) * g.kw + j];
  };
  auto DY = [&](int b, int o, int y, int x_) {
    return dy.data<float>()[((b * g.o + o) * g.oh() + y) * g.ow() + x_];
  };
  std::vector<float> y(g.n * g.o * g.oh() * g.ow(), 0);
  std::vector<float> dx(x.shape().num_elements(), 0);
  std::vector<float> dw(w.shape().num_elements(), 0);
  g.ForEachTap(
      [&](int b, int o, int oy, int ox, int c, int i, int j, int iy, int ix) {
        y[((b * g.o + o) * g.oh() + oy) * g.ow() + ox] +=
            X(b, c, iy, ix) * W(o, c, i, j);
        dx[((b * g.c + c) * g.h + iy) * g.w + ix] +=
            DY(b, o, oy, ox) * W(o, c, i, j);
        dw[((o * g.c + c) * g.kh + i) * g.kw + j] +=
            DY(b, o, oy, ox) * X(b, c, iy, ix);
      });
  GraphBuilder b;
  Value px = b.Parameter(x.shape());
  Value pw = b.Parameter(w.shape());
  Value pdy = b.Parameter(dy.shape());
  auto graph = b.Build(
      {b.Conv2D(px, pw, {g.s, g.s}, {g.p, g.p}),
       b.Conv2DBackpropInput(pdy, pw, x.shape(), {g.s, g.s}, {g.p, g.p}),
       b.Conv2DBackpropFilter(px, pdy, w.shape(), {g.s, g.s}, {g.p, g.p})});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto out = testing::Run(*client_, *graph, {x, w, dy});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(AllClose((*out)[0].ToVector<float>(), y, 1e-5f));
  EXPECT_TRUE(AllClose((*out)[1].ToVector<float>(), dx, 1e-5f));
  EXPECT_TRUE(AllClose((*out)[2].ToVector<float>(), dw, 1e-5f));
}

TEST_F(KernelsTest, Conv2DLargeBatchUsesThePoolAndStaysCorrect) {
  const Conv g{16, 3, 12, 12, 8, 3, 3, 1, 0};
  Literal x = RandomF32({g.n, g.c, g.h, g.w}, rng_);
  Literal w = RandomF32({g.o, g.c, g.kh, g.kw}, rng_);
  std::vector<float> y(g.n * g.o * g.oh() * g.ow(), 0);
  g.ForEachTap(
      [&](int b, int o, int oy, int ox, int c, int i, int j, int iy, int ix) {
        y[((b * g.o + o) * g.oh() + oy) * g.ow() + ox] +=
            x.data<float>()[((b * g.c + c) * g.h + iy) * g.w + ix] *
            w.data<float>()[((o * g.c + c) * g.kh + i) * g.kw + j];
      });
  GraphBuilder b;
  Value px = b.Parameter(x.shape());
  Value pw = b.Parameter(w.shape());
  Literal out = RunOne(b, b.Conv2D(px, pw), {x, w});
  EXPECT_TRUE(AllClose(out.ToVector<float>(), y, 1e-5f));
}

TEST_F(KernelsTest, MaxPoolAndItsGradient) {
  // Window 3, stride 2, padding 1 on a 5x4 image: overlapping windows.
  Literal x = RandomF32({2, 3, 5, 4}, rng_);
  Literal dy = RandomF32({2, 3, 3, 2}, rng_);
  std::vector<float> y(2 * 3 * 3 * 2), dx(x.shape().num_elements(), 0);
  for (int pl = 0; pl < 6; ++pl)
    for (int oy = 0; oy < 3; ++oy)
      for (int ox = 0; ox < 2; ++ox) {
        int best = -1;
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) {
            const int iy = oy * 2 - 1 + i, ix = ox * 2 - 1 + j;
            if (iy < 0 || iy >= 5 || ix < 0 || ix >= 4) continue;
            const int idx = pl * 20 + iy * 4 + ix;
            if (best < 0 || x.data<float>()[idx] > x.data<float>()[best])
              best = idx;
          }
        y[(pl * 3 + oy) * 2 + ox] = x.data<float>()[best];
        dx[best] += dy.data<float>()[(pl * 3 + oy) * 2 + ox];
      }
  GraphBuilder b;
  Value px = b.Parameter(x.shape());
  Value pdy = b.Parameter(dy.shape());
  auto graph = b.Build({b.MaxPool2D(px, {3, 3}, {2, 2}, {1, 1}),
                        b.MaxPool2DGrad(px, pdy, {3, 3}, {2, 2}, {1, 1})});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto out = testing::Run(*client_, *graph, {x, dy});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(AllClose((*out)[0].ToVector<float>(), y, 0));
  EXPECT_TRUE(AllClose((*out)[1].ToVector<float>(), dx, 1e-6f));
}

TEST_F(KernelsTest, SoftmaxFamilyAndLosses) {
  Literal x = RandomF32({4, 5}, rng_, -3, 3);
  Literal labels = I32({4}, {0, 4, 2, 2});
  const auto v = x.data<float>();
  std::vector<float> softmax_rows(20), log_softmax_rows(20), softmax_cols(20);
  double nll = 0;
  for (int r = 0; r < 4; ++r) {
    double z = 0;
    for (int c = 0; c < 5; ++c) z += std::exp(v[r * 5 + c]);
    for (int c = 0; c < 5; ++c) {
      softmax_rows[r * 5 + c] = std::exp(v[r * 5 + c]) / z;
      log_softmax_rows[r * 5 + c] = v[r * 5 + c] - std::log(z);
    }
    nll -= log_softmax_rows[r * 5 + labels.data<int32_t>()[r]];
  }
  for (int c = 0; c < 5; ++c) {
    double z = 0;
    for (int r = 0; r < 4; ++r) z += std::exp(v[r * 5 + c]);
    for (int r = 0; r < 4; ++r)
      softmax_cols[r * 5 + c] = std::exp(v[r * 5 + c]) / z;
  }
  GraphBuilder b;
  Value px = b.Parameter(x.shape());
  Value pl = b.Parameter(labels.shape());
  auto graph = b.Build({b.Softmax(px), b.LogSoftmax(px, 1), b.Softmax(px, 0),
                        b.NllLoss(b.LogSoftmax(px), pl),
                        b.CrossEntropyLoss(px, pl), b.OneHot(pl, 5)});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto out = testing::Run(*client_, *graph, {x, labels});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(AllClose((*out)[0].ToVector<float>(), softmax_rows, 1e-6f));
  EXPECT_TRUE(AllClose((*out)[1].ToVector<float>(), log_softmax_rows, 1e-5f));
  EXPECT_TRUE(AllClose((*out)[2].ToVector<float>(), softmax_cols, 1e-6f));
  EXPECT_NEAR((*out)[3].data<float>()[0], nll / 4, 1e-5);
  EXPECT_NEAR((*out)[4].data<float>()[0], nll / 4, 1e-5);
  std::vector<float> one_hot(20, 0);
  for (int r = 0; r < 4; ++r) one_hot[r * 5 + labels.data<int32_t>()[r]] = 1;
  EXPECT_EQ((*out)[5].ToVector<float>(), one_hot);
}

TEST_F(KernelsTest, LabelOutOfRangeIsARuntimeErrorNamingTheRow) {
  GraphBuilder b;
  Value logits = b.Parameter(F32Shape({3, 4}));
  Value labels = b.Parameter(I32Shape({3}));
  auto graph = b.Build({b.CrossEntropyLoss(logits, labels)});
  ASSERT_TRUE(graph.ok());
  auto out = testing::Run(*client_, *graph,
                          {Literal(F32Shape({3, 4})), I32({3}, {0, 1, 7})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              ::testing::HasSubstr("cross_entropy_loss: label 7 at row 2 is "
                                   "outside [0, 4)"));
}

}  // namespace
}  // namespace podscope::runtime
