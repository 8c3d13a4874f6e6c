// Several devices in one process: copies between lazy contexts and the
// all-reduce mean that keeps data-parallel replicas in step.

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/lazy/lazy.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;

struct TwoDevices {
  std::unique_ptr<Client> client = testing::MakeClient(2);
  std::shared_ptr<LazyContext> ctx0 =
      LazyContext::Create(client.get(), client->addressable_devices()[0])
          .value();
  std::shared_ptr<LazyContext> ctx1 =
      LazyContext::Create(client.get(), client->addressable_devices()[1])
          .value();
};

TEST(DataParallelTest, ToDeviceComputesPendingValuesAndCopies) {
  TwoDevices d;
  Tensor x = d.ctx0->FromVector<float>({3}, {1, 2, 3}) * 2.0f;
  ASSERT_TRUE(x.is_pending());
  Tensor y = ToDevice(x, *d.ctx1);
  EXPECT_FALSE(x.is_pending());  // its step ran to produce the copy
  EXPECT_EQ(y.context(), d.ctx1.get());
  Tensor z = y + 1.0f;  // recorded on device 1
  EXPECT_EQ(z.ToVector<float>().value(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(ToDevice(z, *d.ctx1).impl(), z.impl());  // already there

  Tensor bad = Tensor();
  EXPECT_THAT(ToDevice(bad, *d.ctx0).status().message(),
              HasSubstr("undefined tensor"));
}

TEST(DataParallelTest, AllReduceMeanIsTheSameOnEveryDevice) {
  TwoDevices d;
  std::mt19937 rng(3);
  const Literal a = testing::RandomF32({64, 33}, rng);
  const Literal b = testing::RandomF32({64, 33}, rng);
  // Pending on both devices: AllReduceMean computes them first.
  Tensor ta = d.ctx0->FromLiteral(a) * 3.0f;
  Tensor tb = d.ctx1->FromLiteral(b) * 3.0f;
  auto means = AllReduceMean({ta, tb});
  ASSERT_TRUE(means.ok()) << means.status();
  ASSERT_EQ(means->size(), 2u);
  EXPECT_EQ((*means)[0].context(), d.ctx0.get());
  EXPECT_EQ((*means)[1].context(), d.ctx1.get());
  const std::vector<float> m0 = (*means)[0].ToVector<float>().value();
  const std::vector<float> m1 = (*means)[1].ToVector<float>().value();
  EXPECT_EQ(m0, m1);  // bitwise
  std::vector<float> expected;
  for (size_t i = 0; i < m0.size(); ++i) {
    expected.push_back((3 * a.data<float>()[i] + 3 * b.data<float>()[i]) / 2);
  }
  EXPECT_TRUE(testing::AllClose(m0, expected, 1e-6f));
}

TEST(DataParallelTest, AllReduceMeanErrors) {
  TwoDevices d;
  Tensor a = d.ctx0->FromVector<float>({2}, {1, 2});
  Tensor b = d.ctx1->FromVector<float>({3}, {1, 2, 3});
  auto mismatch = AllReduceMean({a, b});
  ASSERT_FALSE(mismatch.ok());
  EXPECT_THAT(mismatch.status().message(),
              HasSubstr("replica 1 has shape f32[3] but replica 0 has f32[2]"));
  EXPECT_FALSE(AllReduceMean({}).ok());
  // A replica that carries an error passes it on.
  Tensor broken = Matmul(a, a);
  auto failed = AllReduceMean({broken, b});
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("dot"));
}

// Data-parallel SGD on two devices (half the batch each, gradients
// averaged) takes the same steps as one device on the whole batch, and the
// replicas stay bitwise identical.
TEST(DataParallelTest, TwoReplicasTrainLikeOneDeviceOnTheWholeBatch) {
  TwoDevices d;
  auto single_client = testing::MakeClient(1);
  auto single = LazyContext::Create(single_client.get(),
                                    single_client->addressable_devices()[0])
                    .value();
  constexpr int kBatch = 32;
  std::mt19937 rng(9);
  const Literal w0 = testing::RandomF32({5, 3}, rng);
  const Literal b0 = testing::RandomF32({3}, rng);
  std::vector<std::shared_ptr<LazyContext>> replicas = {d.ctx0, d.ctx1};
  std::vector<std::vector<Tensor>> params;
  for (auto& ctx : replicas) {
    params.push_back({ctx->FromLiteral(w0), ctx->FromLiteral(b0)});
  }
  std::vector<Tensor> single_params = {single->FromLiteral(w0),
                                       single->FromLiteral(b0)};
  auto loss_of = [](const std::vector<Tensor>& p, const Tensor& x,
                    const Tensor& y) {
    return CrossEntropyLoss(Tanh(Matmul(x, p[0]) + p[1]), y);
  };
  for (int step = 0; step < 5; ++step) {
    const Literal x = testing::RandomF32({kBatch, 5}, rng);
    std::vector<int32_t> labels(kBatch);
    for (int32_t& l : labels) l = static_cast<int32_t>(rng() % 3);
    // One device, the whole batch.
    {
      Tensor loss = loss_of(single_params, single->FromLiteral(x),
                            single->FromVector<int32_t>({kBatch}, labels));
      auto g = Grad(loss, single_params).value();
      for (int i = 0; i < 2; ++i)
        single_params[i] = single_params[i] - g[i] * 0.5f;
      ASSERT_TRUE(single->Sync().ok());
    }
    // Two replicas, half each.
    std::vector<std::vector<Tensor>> grads;
    for (int r = 0; r < 2; ++r) {
      Tensor xs = Slice(replicas[r]->FromLiteral(x), {r * kBatch / 2, 0},
                        {(r + 1) * kBatch / 2, 5});
      Tensor ys = replicas[r]->FromVector<int32_t>(
          {kBatch / 2},
          std::vector<int32_t>(labels.begin() + r * kBatch / 2,
                               labels.begin() + (r + 1) * kBatch / 2));
      grads.push_back(Grad(loss_of(params[r], xs, ys), params[r]).value());
    }
    for (int i = 0; i < 2; ++i) {
      auto mean = AllReduceMean({grads[0][i], grads[1][i]});
      ASSERT_TRUE(mean.ok()) << mean.status();
      for (int r = 0; r < 2; ++r) {
        params[r][i] = params[r][i] - (*mean)[r] * 0.5f;
      }
    }
    for (auto& ctx : replicas) ASSERT_TRUE(ctx->Sync().ok());
  }
  for (int i = 0; i < 2; ++i) {
    const auto on0 = params[0][i].ToVector<float>().value();
    const auto on1 = params[1][i].ToVector<float>().value();
    EXPECT_EQ(on0, on1) << "parameter " << i;
    EXPECT_TRUE(testing::AllClose(
        on0, single_params[i].ToVector<float>().value(), 1e-5f))
        << "parameter " << i;
  }
}

}  // namespace
}  // namespace podscope::runtime
