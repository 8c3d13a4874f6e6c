// The instrumentation seam reports compiles, transfers, executions and
// every kernel with the user scope it was recorded under.

#include "instrumentation.h"

#include <mutex>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/ir/scope.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

struct OpRecord {
  std::string name;
  std::string scope;
  int num_fused_ops;
  std::thread::id thread;
  int64_t start_ns, end_ns;
};

class Recorder : public internal::RuntimeObserver {
 public:
  void OnTransfer(const internal::TransferEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    (e.to_device ? to_device_bytes : from_device_bytes) += e.bytes;
  }
  void OnCompile(const internal::CompileEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    compiles.push_back({e.graph_fingerprint, e.cache_hit});
  }
  void OnExecute(const internal::ExecuteEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    executes.push_back(e.graph_fingerprint);
    execute_ok = e.status.ok();
  }
  void OnOp(const internal::OpEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    ops.push_back({std::string(e.op_name), std::string(e.scope),
                   e.num_fused_ops, std::this_thread::get_id(), e.start_ns,
                   e.end_ns});
  }

  std::mutex mu;
  int64_t to_device_bytes = 0;
  int64_t from_device_bytes = 0;
  std::vector<std::pair<uint64_t, bool>> compiles;
  std::vector<uint64_t> executes;
  bool execute_ok = false;
  std::vector<OpRecord> ops;
};

class InstrumentationTest : public ::testing::Test {
 protected:
  void SetUp() override { internal::SetRuntimeObserver(&recorder_); }
  void TearDown() override { internal::SetRuntimeObserver(nullptr); }
  Recorder recorder_;
};

TEST_F(InstrumentationTest, ReportsEveryStageWithScopesAndHashes) {
  auto client = testing::MakeClient();
  GraphBuilder b("model");
  Value x = b.Parameter(F32Shape({2, 3}));
  Value w = b.Parameter(F32Shape({3, 4}));
  Value out;
  {
    ScopedName model("forward");
    Value h;
    {
      ScopedName layer("fc1");
      h = b.Dot(x, w);
    }
    ScopedName act("act");
    out = b.Exp(b.Relu(h));
  }
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({out}));
  ASSERT_TRUE(client->Compile(graph).ok());
  auto results = testing::Run(
      *client, graph, {Literal(F32Shape({2, 3})), Literal(F32Shape({3, 4}))});
  ASSERT_TRUE(results.ok()) << results.status();

  std::lock_guard<std::mutex> lock(recorder_.mu);
  ASSERT_EQ(recorder_.compiles.size(), 2u);
  EXPECT_EQ(recorder_.compiles[0], std::make_pair(graph.fingerprint(), false));
  EXPECT_EQ(recorder_.compiles[1], std::make_pair(graph.fingerprint(), true));
  EXPECT_EQ(recorder_.executes, std::vector<uint64_t>{graph.fingerprint()});
  EXPECT_TRUE(recorder_.execute_ok);
  EXPECT_EQ(recorder_.to_device_bytes, (6 + 12) * 4);
  EXPECT_EQ(recorder_.from_device_bytes, 8 * 4);

  ASSERT_EQ(recorder_.ops.size(), 2u);
  EXPECT_EQ(recorder_.ops[0].name, "dot");
  EXPECT_EQ(recorder_.ops[0].scope, "forward/fc1");
  EXPECT_EQ(recorder_.ops[1].name, "fusion");
  EXPECT_EQ(recorder_.ops[1].scope, "forward/act");
  EXPECT_EQ(recorder_.ops[1].num_fused_ops, 2);
  for (const OpRecord& op : recorder_.ops) {
    // Kernels run on the device's stream thread, not the caller's.
    EXPECT_NE(op.thread, std::this_thread::get_id());
    EXPECT_LE(op.start_ns, op.end_ns);
  }
  EXPECT_EQ(recorder_.ops[0].thread, recorder_.ops[1].thread);
  EXPECT_LE(recorder_.ops[0].end_ns, recorder_.ops[1].start_ns);
}

}  // namespace
}  // namespace podscope::runtime
