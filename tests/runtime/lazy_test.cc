// Lazy tensors: recording, step boundaries and executable reuse.

#include "podscope/runtime/lazy/lazy.h"

#include <mutex>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "instrumentation.h"
#include "podscope/runtime/ir/scope.h"
#include "podscope/runtime/metrics.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

class LazyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = testing::MakeClient();
    ctx_ = LazyContext::Create(client_.get(), client_->addressable_devices()[0])
               .value();
  }
  std::unique_ptr<Client> client_;
  std::shared_ptr<LazyContext> ctx_;
};

TEST_F(LazyTest, OpsAreRecordedAndRunAtTheStepBoundary) {
  ResetMetrics();
  Tensor x = ctx_->FromVector<float>({2, 2}, {1, 2, 3, 4});
  Tensor y = Relu(x * 2.0f - 3.0f);
  EXPECT_TRUE(y.is_pending());
  EXPECT_EQ(y.shape(), F32Shape({2, 2}));
  EXPECT_EQ(Metrics().metric("ExecuteTime").total_samples, 0);
  ASSERT_TRUE(ctx_->Sync().ok());
  EXPECT_FALSE(y.is_pending());
  EXPECT_EQ(ctx_->step_count(), 1);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto values, y.ToVector<float>());
  EXPECT_EQ(values, (std::vector<float>{0, 1, 3, 5}));
  EXPECT_EQ(Metrics().metric("ExecuteTime").total_samples, 1);
  EXPECT_EQ(Metrics().counter("StepCount"), 1);
}

TEST_F(LazyTest, ReadingAPendingValueEndsTheStep) {
  Tensor x = ctx_->FromVector<float>({3}, {1, 2, 3});
  Tensor total = Sum(x * x, {0});
  PODSCOPE_ASSERT_OK_AND_ASSIGN(float value, total.Item());
  EXPECT_EQ(value, 14.0f);
  EXPECT_EQ(ctx_->step_count(), 1);
}

TEST_F(LazyTest, RepeatedStepReusesItsExecutableAndAChangedOneRecompiles) {
  Tensor x = ctx_->FromVector<float>({4}, {0, 1, 2, 3});
  uint64_t fingerprint = 0;
  for (int step = 0; step < 5; ++step) {
    x = x * 2.0f + 1.0f;
    ASSERT_TRUE(ctx_->Sync().ok());
    if (step == 0) fingerprint = ctx_->last_graph_fingerprint();
    EXPECT_EQ(ctx_->last_graph_fingerprint(), fingerprint);
  }
  EXPECT_EQ(client_->compile_cache_stats().misses, 1);
  EXPECT_EQ(client_->compile_cache_stats().hits, 4);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto values, x.ToVector<float>());
  EXPECT_EQ(values, (std::vector<float>{31, 63, 95, 127}));

  x = x * 3.0f;  // a different step graph
  ASSERT_TRUE(ctx_->Sync().ok());
  EXPECT_NE(ctx_->last_graph_fingerprint(), fingerprint);
  EXPECT_EQ(client_->compile_cache_stats().misses, 2);
}

TEST_F(LazyTest, BinaryOpsBroadcastNumPyStyle) {
  Tensor m = ctx_->FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = ctx_->FromVector<float>({3}, {10, 20, 30});
  Tensor col = ctx_->FromVector<float>({2, 1}, {100, 200});
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto values, (m + row + col).ToVector<float>());
  EXPECT_EQ(values, (std::vector<float>{111, 122, 133, 214, 225, 236}));
}

TEST_F(LazyTest, ShapeErrorsTravelWithTensorsAndSpareTheRest) {
  Tensor a = ctx_->FromVector<float>({2, 3}, std::vector<float>(6, 1));
  Tensor b = ctx_->FromVector<float>({4}, std::vector<float>(4, 1));
  Tensor bad = a + b;
  EXPECT_THAT(
      bad.status().message(),
      AllOf(HasSubstr("add"), HasSubstr("f32[2,3]"), HasSubstr("f32[4]")));
  Tensor worse = Exp(bad);
  EXPECT_EQ(worse.status(), bad.status());
  Tensor mm = Matmul(a, a);
  EXPECT_THAT(mm.status().message(), HasSubstr("dot"));
  Tensor fine = a * 2.0f;
  ASSERT_TRUE(ctx_->Sync().ok());
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto values, fine.ToVector<float>());
  EXPECT_EQ(values, std::vector<float>(6, 2.0f));
  EXPECT_FALSE(worse.ToLiteral().ok());
}

TEST_F(LazyTest, GradientsAreRecordedIntoTheStep) {
  Tensor w = ctx_->FromVector<float>({3}, {1, -2, 3});
  Tensor loss = Sum(w * w * 0.5f, {0});
  PODSCOPE_ASSERT_OK_AND_ASSIGN(std::vector<Tensor> grads, Grad(loss, {w}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto values, grads[0].ToVector<float>());
  EXPECT_EQ(values, (std::vector<float>{1, -2, 3}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(float l, loss.Item());
  EXPECT_EQ(l, 7.0f);
  EXPECT_EQ(ctx_->step_count(), 1);  // both came from one step
}

TEST_F(LazyTest, RuntimeErrorsReachTheReader) {
  Tensor logits = ctx_->FromVector<float>({2, 3}, std::vector<float>(6, 0));
  Tensor labels = ctx_->FromVector<int32_t>({2}, {0, 3});
  Tensor loss = CrossEntropyLoss(logits, labels);
  auto value = loss.Item();
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(value.status().message(), HasSubstr("label 3 at row 1"));
}

class StepRecorder : public internal::RuntimeObserver {
 public:
  void OnOp(const internal::OpEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    ops.push_back(std::string(e.scope) + "/" + std::string(e.op_name));
  }
  void OnStep(const internal::StepEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    steps.push_back(e.step);
  }
  std::mutex mu;
  std::vector<std::string> ops;
  std::vector<int64_t> steps;
};

TEST_F(LazyTest, DroppedIntermediatesFuseAndScopesNameTheKernels) {
  StepRecorder recorder;
  internal::SetRuntimeObserver(&recorder);
  Tensor x = ctx_->FromVector<float>({8}, std::vector<float>(8, 1));
  Tensor y;
  {
    ScopedName scope("train_step");
    y = Exp(Relu(x * 2.0f) + 1.0f);  // the intermediates die here
  }
  ASSERT_TRUE(ctx_->Sync().ok());
  ASSERT_TRUE(y.ToLiteral().ok());
  internal::SetRuntimeObserver(nullptr);
  std::lock_guard<std::mutex> lock(recorder.mu);
  EXPECT_EQ(recorder.ops, std::vector<std::string>{"train_step/fusion"});
  EXPECT_EQ(recorder.steps, std::vector<int64_t>{1});
}

}  // namespace
}  // namespace podscope::runtime
