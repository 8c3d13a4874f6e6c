// Training readiness: a 2-layer MLP trained with Grad and SGD must learn a
// small synthetic classification problem.

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "podscope/runtime/ir/autodiff.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

constexpr int kSamples = 120;
constexpr int kClasses = 3;
constexpr int kHidden = 16;

// Three Gaussian blobs in the plane, one per class.
void MakeBlobs(std::vector<float>* points, std::vector<int32_t>* labels) {
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.35f);
  const float centers[kClasses][2] = {{1, 0}, {-0.5f, 0.87f}, {-0.5f, -0.87f}};
  for (int i = 0; i < kSamples; ++i) {
    const int label = i % kClasses;
    points->push_back(centers[label][0] + noise(rng));
    points->push_back(centers[label][1] + noise(rng));
    labels->push_back(label);
  }
}

Literal Init(std::vector<int64_t> dims, float scale, std::mt19937& rng) {
  return testing::RandomF32(std::move(dims), rng, -scale, scale);
}

TEST(TrainingTest, MlpWithGradAndSgdLearnsBlobs) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  std::vector<float> points;
  std::vector<int32_t> labels;
  MakeBlobs(&points, &labels);

  // One training step as one graph: forward, backward and the SGD update.
  GraphBuilder b("mlp_train_step");
  Value x = b.Parameter(F32Shape({kSamples, 2}));
  Value y = b.Parameter(I32Shape({kSamples}));
  Value w1 = b.Parameter(F32Shape({2, kHidden}));
  Value b1 = b.Parameter(F32Shape({kHidden}));
  Value w2 = b.Parameter(F32Shape({kHidden, kClasses}));
  Value b2 = b.Parameter(F32Shape({kClasses}));
  Value h = b.Relu(b.Add(b.Dot(x, w1), b.BroadcastTo(b1, {kSamples, kHidden})));
  Value logits = b.Add(b.Dot(h, w2), b.BroadcastTo(b2, {kSamples, kClasses}));
  Value loss = b.CrossEntropyLoss(logits, y);
  const std::vector<Value> weights = {w1, b1, w2, b2};
  auto grads = Grad(b, loss, weights);
  ASSERT_TRUE(grads.ok()) << grads.status();
  std::vector<Value> outputs = {loss};
  for (size_t i = 0; i < weights.size(); ++i) {
    const Shape& shape = b.shape(weights[i]);
    outputs.push_back(
        b.Sub(weights[i], b.Mul(b.Full(shape, 0.5f), (*grads)[i])));
  }
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build(outputs));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));

  std::mt19937 rng(5);
  std::vector<BufferPtr> args = {
      client->BufferFromLiteral(testing::F32({kSamples, 2}, points), device)
          .value(),
      client->BufferFromLiteral(testing::I32({kSamples}, labels), device)
          .value(),
      client->BufferFromLiteral(Init({2, kHidden}, 0.7f, rng), device).value(),
      client->BufferFromLiteral(Literal(F32Shape({kHidden})), device).value(),
      client->BufferFromLiteral(Init({kHidden, kClasses}, 0.25f, rng), device)
          .value(),
      client->BufferFromLiteral(Literal(F32Shape({kClasses})), device).value(),
  };
  std::vector<float> losses;
  for (int step = 0; step < 50; ++step) {
    PODSCOPE_ASSERT_OK_AND_ASSIGN(auto results,
                                  executable->Execute(args, device));
    // The updated weights stay on the device for the next step.
    for (int i = 0; i < 4; ++i) args[2 + i] = results[1 + i];
    PODSCOPE_ASSERT_OK_AND_ASSIGN(Literal l, results[0]->ToLiteral().Await());
    losses.push_back(l.data<float>()[0]);
  }
  EXPECT_NEAR(losses.front(), std::log(3.0f), 0.3f);
  EXPECT_LT(losses.back(), 0.25f * losses.front())
      << "first " << losses.front() << " last " << losses.back();
  EXPECT_EQ(client->compile_cache_stats().misses, 1);
}

TEST(TrainingTest, LazyMlpStepsReuseOneExecutable) {
  auto client = testing::MakeClient();
  auto ctx = LazyContext::Create(client.get(), client->addressable_devices()[0])
                 .value();
  std::vector<float> points;
  std::vector<int32_t> labels;
  MakeBlobs(&points, &labels);
  std::mt19937 rng(5);
  Tensor x = ctx->FromVector<float>({kSamples, 2}, points);
  Tensor y = ctx->FromVector<int32_t>({kSamples}, labels);
  Tensor w1 = ctx->FromLiteral(Init({2, kHidden}, 0.7f, rng));
  Tensor b1 = ctx->FromLiteral(Literal(F32Shape({kHidden})));
  Tensor w2 = ctx->FromLiteral(Init({kHidden, kClasses}, 0.25f, rng));
  Tensor b2 = ctx->FromLiteral(Literal(F32Shape({kClasses})));
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    Tensor logits = Matmul(Relu(Matmul(x, w1) + b1), w2) + b2;
    Tensor loss = CrossEntropyLoss(logits, y);
    auto grads = Grad(loss, {w1, b1, w2, b2});
    ASSERT_TRUE(grads.ok()) << grads.status();
    w1 = w1 - (*grads)[0] * 0.5f;
    b1 = b1 - (*grads)[1] * 0.5f;
    w2 = w2 - (*grads)[2] * 0.5f;
    b2 = b2 - (*grads)[3] * 0.5f;
    ASSERT_TRUE(ctx->Sync().ok());
    if (step == 0 || step == 39) {
      PODSCOPE_ASSERT_OK_AND_ASSIGN(float value, loss.Item());
      (step == 0 ? first : last) = value;
    }
  }
  EXPECT_LT(last, 0.25f * first) << "first " << first << " last " << last;
  EXPECT_EQ(client->compile_cache_stats().misses, 1);
  EXPECT_EQ(client->compile_cache_stats().hits, 39);
}

}  // namespace
}  // namespace podscope::runtime
