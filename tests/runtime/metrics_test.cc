// runtime::Metrics() and the text report.

#include "podscope/runtime/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, CountsCompilesTransfersAndExecutions) {
  ResetMetrics();
  auto client = testing::MakeClient();
  GraphBuilder b("metrics");
  Value x = b.Parameter(F32Shape({16}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({b.Tanh(x)}));
  for (int i = 0; i < 3; ++i) {
    auto results = testing::Run(*client, graph, {Literal(F32Shape({16}))});
    ASSERT_TRUE(results.ok()) << results.status();
  }
  const MetricsSnapshot snapshot = Metrics();
  EXPECT_EQ(snapshot.counter("UncachedCompile"), 1);
  EXPECT_EQ(snapshot.counter("CachedCompile"), 2);
  EXPECT_EQ(snapshot.metric("CompileTime").total_samples, 1);
  EXPECT_GT(snapshot.metric("CompileTime").accumulator_ns, 0);
  EXPECT_EQ(snapshot.metric("ExecuteTime").total_samples, 3);
  EXPECT_EQ(snapshot.metric("TransferToDeviceTime").total_samples, 3);
  EXPECT_EQ(snapshot.metric("TransferFromDeviceTime").total_samples, 3);
  const MetricData execute = snapshot.metric("ExecuteTime");
  EXPECT_LE(execute.min_ns, execute.p50_ns);
  EXPECT_LE(execute.p50_ns, execute.max_ns);
  EXPECT_EQ(snapshot.metric("NoSuchMetric").total_samples, 0);

  const std::string report = MetricsReport();
  EXPECT_THAT(report, HasSubstr("Metric: CompileTime\n  TotalSamples: 1\n"));
  EXPECT_THAT(report, HasSubstr("Metric: ExecuteTime\n  TotalSamples: 3\n"));
  EXPECT_THAT(report, HasSubstr("Counter: CachedCompile\n  Value: 2\n"));
  EXPECT_THAT(report, HasSubstr("Counter: UncachedCompile\n  Value: 1\n"));
  EXPECT_THAT(report, HasSubstr("Percentiles: 50%="));

  ResetMetrics();
  EXPECT_TRUE(Metrics().metrics.empty());
  EXPECT_EQ(Metrics().counter("CachedCompile"), 0);
}

}  // namespace
}  // namespace podscope::runtime
