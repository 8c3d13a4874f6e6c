// Dropout: the mask's statistics and determinism, the scaling, shape errors,
// and the lazy API's seed per step.

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/lazy/lazy.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using testing::I32;

constexpr int64_t kElements = 200000;

// Dropout of an all-ones f32[kElements] with the given seed, rate and salt.
std::vector<float> DropOnes(Client& client, int32_t seed, float rate,
                            int64_t salt) {
  GraphBuilder b("dropout");
  Value x = b.Parameter(F32Shape({kElements}));
  Value s = b.Parameter(I32Shape({}));
  auto graph = b.Build({b.Dropout(x, s, rate, salt)});
  EXPECT_TRUE(graph.ok()) << graph.status();
  Literal ones(F32Shape({kElements}));
  for (float& v : ones.mutable_data<float>()) v = 1.0f;
  auto out = testing::Run(client, *graph, {ones, I32({}, {seed})});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0].ToVector<float>() : std::vector<float>();
}

int64_t CountDifferent(const std::vector<float>& a,
                       const std::vector<float>& b) {
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

TEST(DropoutTest, DropsAboutRateAndScalesTheRest) {
  auto client = testing::MakeClient();
  for (float rate : {0.1f, 0.25f, 0.5f, 0.9f}) {
    SCOPED_TRACE(rate);
    const std::vector<float> y = DropOnes(*client, 42, rate, 0);
    ASSERT_EQ(y.size(), static_cast<size_t>(kElements));
    int64_t dropped = 0;
    double sum = 0;
    for (float v : y) {
      if (v == 0.0f) {
        ++dropped;
      } else {
        EXPECT_FLOAT_EQ(v, 1.0f / (1.0f - rate));
      }
      sum += v;
    }
    // Binomial: 5 standard deviations are < 0.6 % of 200k elements.
    EXPECT_NEAR(static_cast<double>(dropped) / kElements, rate, 0.006);
    // Inverted dropout keeps the expected value.
    EXPECT_NEAR(sum / kElements, 1.0, 0.06);
  }
}

TEST(DropoutTest, MaskIsAFunctionOfSeedAndSalt) {
  auto client = testing::MakeClient();
  const std::vector<float> a = DropOnes(*client, 7, 0.5f, 0);
  EXPECT_EQ(DropOnes(*client, 7, 0.5f, 0), a);  // reproducible
  // Another seed or salt: an independent mask, which differs from this one
  // in about half of the elements at rate 0.5.
  for (const auto& other :
       {DropOnes(*client, 8, 0.5f, 0), DropOnes(*client, 7, 0.5f, 1),
        DropOnes(*client, -7, 0.5f, 0)}) {
    EXPECT_NEAR(static_cast<double>(CountDifferent(a, other)) / kElements, 0.5,
                0.01);
  }
}

TEST(DropoutTest, RateZeroIsIdentityAndRateOneDropsAll) {
  auto client = testing::MakeClient();
  for (float v : DropOnes(*client, 3, 0.0f, 0)) ASSERT_EQ(v, 1.0f);
  for (float v : DropOnes(*client, 3, 1.0f, 0)) ASSERT_EQ(v, 0.0f);
}

TEST(DropoutTest, BuilderNumbersMasksOfOneSeed) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({4}));
  Value seed = b.Parameter(I32Shape({}));
  Value first = b.Dropout(x, seed, 0.5f);
  Value second = b.Dropout(x, seed, 0.5f);
  Value explicit_salt = b.Dropout(x, seed, 0.5f, 9);
  Value after = b.Dropout(x, seed, 0.5f);
  ASSERT_TRUE(b.status().ok()) << b.status();
  EXPECT_EQ(b.node(first).attrs.salt, 0);
  EXPECT_EQ(b.node(second).attrs.salt, 1);
  EXPECT_EQ(b.node(explicit_salt).attrs.salt, 9);
  EXPECT_EQ(b.node(after).attrs.salt, 10);
}

TEST(DropoutTest, ErrorsNameTheOpAndTheProblem) {
  GraphBuilder b;
  Value x = b.Parameter(F32Shape({4}));
  Value seed = b.Parameter(I32Shape({}));
  EXPECT_FALSE(b.Dropout(x, seed, 1.5f).valid());
  EXPECT_THAT(b.TakeStatus().message(),
              HasSubstr("dropout: rate 1.5 is outside [0, 1]"));
  EXPECT_FALSE(b.Dropout(x, x, 0.5f).valid());
  EXPECT_THAT(b.TakeStatus().message(),
              HasSubstr("dropout: expects an f32 operand and an i32 scalar "
                        "seed (operand shapes: f32[4], f32[4])"));
  EXPECT_FALSE(b.Dropout(x, seed, std::nanf("")).valid());
  EXPECT_THAT(b.TakeStatus().message(), HasSubstr("outside [0, 1]"));
}

TEST(DropoutTest, DifferentRatesCompileSeparately) {
  GraphBuilder a, b;
  Value xa = a.Parameter(F32Shape({4}));
  Value xb = b.Parameter(F32Shape({4}));
  auto ga = a.Build({a.Dropout(xa, a.Parameter(I32Shape({})), 0.5f)});
  auto gb = b.Build({b.Dropout(xb, b.Parameter(I32Shape({})), 0.5000001f)});
  ASSERT_TRUE(ga.ok() && gb.ok());
  EXPECT_NE(ga->structural_key(), gb->structural_key());
}

// The lazy API draws a new mask every step from the context's seed, without
// recompiling, and reproduces a run given the same seed.
TEST(DropoutTest, LazyStepsDrawNewMasksFromTheContextSeed) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  auto run = [&](uint64_t seed) {
    auto ctx = LazyContext::Create(client.get(), device).value();
    ctx->SetSeed(seed);
    Literal ones(F32Shape({4096}));
    for (float& v : ones.mutable_data<float>()) v = 1.0f;
    Tensor x = ctx->FromLiteral(ones);
    std::vector<std::vector<float>> masks;
    for (int step = 0; step < 3; ++step) {
      Tensor a = Dropout(x, 0.5f);
      Tensor b = Dropout(x, 0.5f);
      EXPECT_TRUE(ctx->Sync().ok());
      masks.push_back(a.ToVector<float>().value());
      masks.push_back(b.ToVector<float>().value());
    }
    return masks;
  };
  const auto first = run(5);
  ASSERT_EQ(first.size(), 6u);
  // Two dropouts in a step, and the same dropout in successive steps, draw
  // different masks.
  EXPECT_GT(CountDifferent(first[0], first[1]), 1000);
  EXPECT_GT(CountDifferent(first[0], first[2]), 1000);
  EXPECT_GT(CountDifferent(first[2], first[4]), 1000);
  EXPECT_EQ(run(5), first);                              // reproducible
  EXPECT_GT(CountDifferent(run(6)[0], first[0]), 1000);  // seeded
  // One graph for every step of both runs with seed 5 and the one with 6.
  EXPECT_EQ(client->compile_cache_stats().misses, 1);
}

TEST(DropoutTest, LazyRateZeroRecordsNothing) {
  auto client = testing::MakeClient();
  auto ctx = LazyContext::Create(client.get(), client->addressable_devices()[0])
                 .value();
  Tensor x = ctx->FromVector<float>({3}, {1, 2, 3});
  Tensor y = Dropout(x, 0.0f);
  EXPECT_FALSE(y.is_pending());
  EXPECT_EQ(y.ToVector<float>().value(), (std::vector<float>{1, 2, 3}));
}

}  // namespace
}  // namespace podscope::runtime
