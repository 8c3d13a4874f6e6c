// The convolution kernels unroll blocks of samples side by side and multiply
// each block in one product (kernels/conv.cc): every geometry, including
// batches that take several blocks, matches naive loops.

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

struct Geometry {
  int n, c, h, w, o, kh, kw, s, p;
  int oh() const { return (h + 2 * p - kh) / s + 1; }
  int ow() const { return (w + 2 * p - kw) / s + 1; }
};

// Runs conv2d and both gradients of geometry `g` and compares them with
// direct loops over every tap (in double precision).
void ExpectMatchesNaiveLoops(const Geometry& g, float tolerance) {
  std::mt19937 rng(7);
  Literal x = testing::RandomF32({g.n, g.c, g.h, g.w}, rng);
  Literal w = testing::RandomF32({g.o, g.c, g.kh, g.kw}, rng);
  Literal dy = testing::RandomF32({g.n, g.o, g.oh(), g.ow()}, rng);
  const float* X = x.data<float>().data();
  const float* W = w.data<float>().data();
  const float* DY = dy.data<float>().data();
  std::vector<double> y(g.n * g.o * g.oh() * g.ow(), 0);
  std::vector<double> dx(x.shape().num_elements(), 0);
  std::vector<double> dw(w.shape().num_elements(), 0);
  for (int b = 0; b < g.n; ++b)
    for (int o = 0; o < g.o; ++o)
      for (int oy = 0; oy < g.oh(); ++oy)
        for (int ox = 0; ox < g.ow(); ++ox)
          for (int c = 0; c < g.c; ++c)
            for (int i = 0; i < g.kh; ++i)
              for (int j = 0; j < g.kw; ++j) {
                const int iy = oy * g.s - g.p + i, ix = ox * g.s - g.p + j;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const int xi = ((b * g.c + c) * g.h + iy) * g.w + ix;
                const int wi = ((o * g.c + c) * g.kh + i) * g.kw + j;
                const int yi = ((b * g.o + o) * g.oh() + oy) * g.ow() + ox;
                y[yi] += double{X[xi]} * W[wi];
                dx[xi] += double{DY[yi]} * W[wi];
                dw[wi] += double{DY[yi]} * X[xi];
              }
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  GraphBuilder b("conv");
  Value px = b.Parameter(x.shape());
  Value pw = b.Parameter(w.shape());
  Value pdy = b.Parameter(dy.shape());
  auto graph = b.Build(
      {b.Conv2D(px, pw, {g.s, g.s}, {g.p, g.p}),
       b.Conv2DBackpropInput(pdy, pw, x.shape(), {g.s, g.s}, {g.p, g.p}),
       b.Conv2DBackpropFilter(px, pdy, w.shape(), {g.s, g.s}, {g.p, g.p})});
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto out = testing::Run(*client, *graph, {x, w, dy});
  ASSERT_TRUE(out.ok()) << out.status();
  auto as_float = [](const std::vector<double>& v) {
    return std::vector<float>(v.begin(), v.end());
  };
  EXPECT_TRUE(
      testing::AllClose((*out)[0].ToVector<float>(), as_float(y), tolerance));
  EXPECT_TRUE(
      testing::AllClose((*out)[1].ToVector<float>(), as_float(dx), tolerance));
  EXPECT_TRUE(
      testing::AllClose((*out)[2].ToVector<float>(), as_float(dw), tolerance));
}

TEST(ConvBlocks, StrideOnePaddedOneBlock) {
  ExpectMatchesNaiveLoops({4, 3, 9, 7, 5, 3, 3, 1, 1}, 1e-4f);
}

TEST(ConvBlocks, WideKernelLargerThanThePadding) {
  ExpectMatchesNaiveLoops({2, 2, 6, 11, 3, 2, 5, 1, 2}, 1e-4f);
}

// 64 channels of 56 x 56 with a 3 x 3 kernel: 576 x 3136 columns per
// sample, so 5 samples take three blocks (2, 2, 1) and the filter gradient
// sums over blocks.
TEST(ConvBlocks, BatchesOfSeveralBlocks) {
  ExpectMatchesNaiveLoops({5, 64, 56, 56, 4, 3, 3, 1, 1}, 1e-3f);
}

}  // namespace
}  // namespace podscope::runtime
