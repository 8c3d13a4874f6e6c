// The runtime reports to the profiler: with a session recording, compiles
// and launches are host scopes, every kernel is a slice on its device's
// stream track named "<scope>/<op>", transfers sit on the device's transfer
// track, and a flow leads from each Execute launch to its first kernel.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "instrumentation.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/ir/scope.h"
#include "podscope/runtime/lazy/lazy.h"
#include "podscope/runtime/metrics.h"
#include "podscope/runtime/pjrt/client.h"
#include "podscope/trace_format/reader.h"
#include "test_util.h"
#include "trace_file.h"

namespace podscope::runtime {
namespace {

namespace tf = podscope::trace_format;

using profiler::testing::FreshDir;
using profiler::testing::TrackView;
using File = profiler::testing::TraceFile;

File ReadFile(const std::string& path) {
  File f = profiler::testing::ReadTraceFile(path);
  EXPECT_NE(f.reader, nullptr) << "cannot read " << path;
  return f;
}

// Compiles and runs `graph` twice (a cache miss, then a hit) on `device`.
void RunTwice(Client& client, Device* device, const Graph& graph) {
  for (int run = 0; run < 2; ++run) {
    PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client.Compile(graph));
    PODSCOPE_ASSERT_OK_AND_ASSIGN(
        BufferPtr xb, client.BufferFromLiteral(
                          testing::F32({2, 3}, {1, 2, 3, 4, 5, 6}), device));
    PODSCOPE_ASSERT_OK_AND_ASSIGN(
        BufferPtr wb,
        client.BufferFromLiteral(Literal(F32Shape({3, 4})), device));
    PODSCOPE_ASSERT_OK_AND_ASSIGN(auto outputs,
                                  executable->Execute({xb, wb}, device));
    ASSERT_EQ(outputs.size(), 1u);
    auto literal = outputs[0]->ToLiteral().Await();
    ASSERT_TRUE(literal.ok()) << literal.status();
  }
}

void ExpectMemoryCounter(const File& file, const Device& device,
                         const MemoryStats& memory) {
  // Device memory after every allocation and release: the device's whole
  // life was captured, so the trace's peak is its peak.
  const TrackView* in_use =
      file.Track("device " + std::to_string(device.id()) + " memory in use");
  ASSERT_NE(in_use, nullptr);
  EXPECT_EQ(in_use->track.kind(), tf::proto::TRACK_KIND_COUNTER);
  EXPECT_EQ(in_use->track.unit(), "bytes");
  ASSERT_FALSE(in_use->events.counters.empty());
  double peak = 0;
  for (const tf::CounterSample& c : in_use->events.counters) {
    EXPECT_GE(c.value, 0);
    peak = std::max(peak, c.value);
  }
  EXPECT_GE(peak, (6 + 12 + 8) * 4);  // x, w and the output at once
  EXPECT_EQ(peak, memory.peak_bytes_in_use);
  EXPECT_EQ(in_use->events.counters.back().value, memory.bytes_in_use);
}

// Compile scopes (a miss, then a hit) and each Execute launch's flow to the
// first kernel of its execution on `stream`.
void ExpectCompilesAndFlows(const File& file, const TrackView& stream,
                            const Graph& graph) {
  std::vector<int64_t> cache_hits;
  std::vector<uint64_t> execute_flows;
  for (const TrackView& t : file.tracks) {
    for (uint32_t i = 0; i < t.events.slices.size(); ++i) {
      const std::string name = file.Name(t.events.slices[i].name);
      if (name == "Compile") {
        EXPECT_EQ(file.IntArg(t, i, "graph_hash"),
                  static_cast<int64_t>(graph.fingerprint()));
        cache_hits.push_back(file.IntArg(t, i, "cache_hit"));
      } else if (name == "Execute") {
        for (const tf::FlowLink& flow : t.events.flows) {
          if (flow.kind == tf::EventKind::kSlice && flow.index == i &&
              flow.phase == tf::FlowPhase::kBegin) {
            execute_flows.push_back(flow.flow_id);
          }
        }
      }
    }
  }
  EXPECT_EQ(cache_hits, (std::vector<int64_t>{0, 1}));

  // Each launch's flow ends at the first kernel of its execution.
  ASSERT_EQ(execute_flows.size(), 2u);
  for (uint64_t flow_id : execute_flows) {
    int ends = 0;
    for (const tf::FlowLink& flow : stream.events.flows) {
      if (flow.flow_id != flow_id) continue;
      EXPECT_EQ(flow.phase, tf::FlowPhase::kEnd);
      ASSERT_LT(flow.index, stream.events.slices.size());
      EXPECT_EQ(file.Name(stream.events.slices[flow.index].name),
                "forward/dot");
      ++ends;
    }
    EXPECT_EQ(ends, 1) << flow_id;
  }
}

// Transfers with their sizes.
void ExpectTransfers(const File& file, const std::string& id) {
  const TrackView* transfers = file.Track("device " + id + " transfers");
  ASSERT_NE(transfers, nullptr);
  EXPECT_EQ(transfers->track.stream_id(), 1);
  std::map<std::string, std::vector<int64_t>> bytes;
  for (uint32_t i = 0; i < transfers->events.slices.size(); ++i) {
    bytes[file.Name(transfers->events.slices[i].name)].push_back(
        file.IntArg(*transfers, i, "bytes"));
  }
  EXPECT_EQ(bytes["TransferToDevice"],
            (std::vector<int64_t>{6 * 4, 12 * 4, 6 * 4, 12 * 4}));
  EXPECT_EQ(bytes["TransferFromDevice"], (std::vector<int64_t>{8 * 4, 8 * 4}));
}

TEST(ProfilerIntegration, DeviceOpsTransfersCompilesAndFlows) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  Device* device = client->addressable_devices()[0];

  GraphBuilder b("model");
  Value x = b.Parameter(F32Shape({2, 3}));
  Value w = b.Parameter(F32Shape({3, 4}));
  Value out;
  {
    ScopedName forward("forward");
    out = b.Relu(b.Dot(x, w));
  }
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({out}));

  const std::string dir = FreshDir("device_ops");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  ASSERT_NO_FATAL_FAILURE(RunTwice(*client, device, graph));
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  PODSCOPE_ASSERT_OK_AND_ASSIGN(const MemoryStats memory,
                                device->GetMemoryStats());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();

  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);

  ASSERT_NO_FATAL_FAILURE(ExpectMemoryCounter(file, *device, memory));

  // The device is described in the metadata, with its tracks.
  ASSERT_GE(file.reader->metadata().devices_size(), 1);
  EXPECT_EQ(file.reader->metadata().devices(0).global_id(), device->id());

  // Kernels on the stream track, named after the user scope.
  const std::string id = std::to_string(device->id());
  const TrackView* stream = file.Track("device " + id + " (CPU) stream");
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->track.kind(), tf::proto::TRACK_KIND_DEVICE_STREAM);
  EXPECT_EQ(stream->track.device_id(), device->id());
  EXPECT_EQ(stream->track.stream_id(), 0);
  std::map<std::string, int> op_counts;
  for (uint32_t i = 0; i < stream->events.slices.size(); ++i) {
    const tf::Slice& s = stream->events.slices[i];
    ++op_counts[file.Name(s.name)];
    EXPECT_EQ(file.IntArg(*stream, i, "graph_hash"),
              static_cast<int64_t>(graph.fingerprint()));
    EXPECT_GE(file.IntArg(*stream, i, "fused_ops"), 1);
  }
  EXPECT_EQ(op_counts["forward/dot"], 2) << ::testing::PrintToString(op_counts);

  ExpectCompilesAndFlows(file, *stream, graph);
  ExpectTransfers(file, id);
}

TEST(ProfilerIntegration, LazyStepsAndUnscopedOps) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto ctx,
                                LazyContext::Create(client.get(), device));

  const std::string dir = FreshDir("lazy_steps");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  Tensor x = ctx->FromVector<float>({4}, {1, 2, 3, 4});
  for (int step = 0; step < 3; ++step) {
    x = Exp(x * 0.5f);  // outside any ScopedName
    ASSERT_TRUE(ctx->Sync().ok());
  }
  ASSERT_TRUE(x.ToLiteral().ok());
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();

  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);
  const std::string id = std::to_string(device->id());
  // Step boundaries are a counter, not slices (see profiler_observer.h).
  const TrackView* steps = file.Track("device " + id + " lazy step");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->track.kind(), tf::proto::TRACK_KIND_COUNTER);
  std::vector<double> values;
  for (const tf::CounterSample& c : steps->events.counters) {
    values.push_back(c.value);
  }
  EXPECT_EQ(values, (std::vector<double>{1, 2, 3}));

  const TrackView* stream = file.Track("device " + id + " (CPU) stream");
  ASSERT_NE(stream, nullptr);
  ASSERT_EQ(stream->events.slices.size(), 3u);
  for (const tf::Slice& s : stream->events.slices) {
    EXPECT_EQ(file.Name(s.name), "fusion");  // no scope, no leading "/"
  }
}

std::vector<double> CounterValues(const TrackView& track) {
  std::vector<double> values;
  for (const tf::CounterSample& c : track.events.counters) {
    values.push_back(c.value);
  }
  return values;
}

// The metrics report (metrics.h) is in the trace as counter tracks: each
// timer sample and each counter's total, matching what Metrics() says.
TEST(ProfilerIntegration, MetricsAreCounterTracks) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto ctx,
                                LazyContext::Create(client.get(), device));
  ResetMetrics();

  const std::string dir = FreshDir("metrics");
  const int64_t capture_start = internal::NowNs();
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  Tensor w = ctx->FromVector<float>({2, 2}, {1, 0, 0, 1});
  Tensor x = ctx->FromVector<float>({1, 2}, {1, 2});
  constexpr int kSteps = 4;
  for (int step = 0; step < kSteps; ++step) {
    x = Tanh(Matmul(x, w));  // one graph: a miss, then hits
    ASSERT_TRUE(ctx->Sync().ok());
  }
  Tensor y = Exp(x);  // a second graph: another miss
  PODSCOPE_ASSERT_OK_AND_ASSIGN(std::vector<float> values, y.ToVector<float>());
  ASSERT_EQ(values.size(), 2u);
  ASSERT_TRUE(device->WaitUntilIdle().ok());
  const MetricsSnapshot metrics = Metrics();
  auto path = profiler::StopTrace();
  const int64_t capture_end = internal::NowNs();
  ASSERT_TRUE(path.ok()) << path.status();

  EXPECT_EQ(metrics.counter("UncachedCompile"), 2);
  EXPECT_EQ(metrics.counter("CachedCompile"), kSteps - 1);
  EXPECT_EQ(metrics.counter("StepCount"), kSteps + 1);

  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);
  for (const char* timer : {"CompileTime", "ExecuteTime",
                            "TransferToDeviceTime", "TransferFromDeviceTime"}) {
    SCOPED_TRACE(timer);
    const TrackView* track = file.Track(std::string("runtime ") + timer);
    ASSERT_NE(track, nullptr);
    EXPECT_EQ(track->track.kind(), tf::proto::TRACK_KIND_COUNTER);
    EXPECT_EQ(track->track.unit(), "ns");
    const MetricData data = metrics.metric(timer);
    ASSERT_EQ(static_cast<int64_t>(track->events.counters.size()),
              data.total_samples);
    double sum = 0;
    for (const tf::CounterSample& c : track->events.counters) {
      // A sample is a positive duration that fits in the capture, taken
      // while it ran.
      EXPECT_GT(c.value, 0);
      EXPECT_LT(c.value, capture_end - capture_start);
      EXPECT_GE(c.ts_ns, capture_start);
      EXPECT_LE(c.ts_ns, capture_end);
      sum += c.value;
    }
    EXPECT_EQ(static_cast<int64_t>(sum), data.accumulator_ns);
  }
  EXPECT_EQ(file.Track("runtime CompileTime")->events.counters.size(), 2u);
  EXPECT_EQ(file.Track("runtime ExecuteTime")->events.counters.size(),
            static_cast<size_t>(kSteps + 1));
  EXPECT_EQ(file.Track("runtime TransferToDeviceTime")->events.counters.size(),
            2u);

  // Counters: the running total at each increment.
  const std::map<std::string, std::vector<double>> expected = {
      {"UncachedCompile", {1, 2}},
      {"CachedCompile", {1, 2, 3}},
      {"StepCount", {1, 2, 3, 4, 5}}};
  for (const auto& [name, totals] : expected) {
    SCOPED_TRACE(name);
    const TrackView* track = file.Track("runtime " + name);
    ASSERT_NE(track, nullptr);
    EXPECT_EQ(track->track.kind(), tf::proto::TRACK_KIND_COUNTER);
    EXPECT_EQ(track->track.unit(), "count");
    EXPECT_EQ(CounterValues(*track), totals);
    EXPECT_EQ(totals.back(), metrics.counter(name));
  }
}

// Two devices' streams record concurrently into one capture (the
// ThreadSanitizer run covers this), and a copy between them is on the
// receiving device's transfer track.
TEST(ProfilerIntegration, TwoDevicesAndTheirCopiesInOneCapture) {
  auto client = testing::MakeClient(2);
  ASSERT_NE(client, nullptr);
  std::vector<std::shared_ptr<LazyContext>> contexts;
  for (Device* device : client->addressable_devices()) {
    PODSCOPE_ASSERT_OK_AND_ASSIGN(auto ctx,
                                  LazyContext::Create(client.get(), device));
    contexts.push_back(ctx);
  }
  const std::string dir = FreshDir("two_devices");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  constexpr int kSteps = 3;
  std::vector<Tensor> x;
  for (auto& ctx : contexts) {
    x.push_back(ctx->FromLiteral(Literal(F32Shape({64, 64}))));
  }
  for (int step = 0; step < kSteps; ++step) {
    for (size_t d = 0; d < contexts.size(); ++d) {
      ScopedName s("replica");
      x[d] = Tanh(Matmul(x[d], x[d]) + 1.0f);
    }
    auto means = AllReduceMean(x);  // runs both steps, copies across
    ASSERT_TRUE(means.ok()) << means.status();
    x = *std::move(means);
    for (auto& ctx : contexts) ASSERT_TRUE(ctx->Sync().ok());
  }
  for (const Tensor& t : x) ASSERT_TRUE(t.ToLiteral().ok());
  for (Device* device : client->addressable_devices()) {
    ASSERT_TRUE(device->WaitUntilIdle().ok());
  }
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();

  const File file = ReadFile(*path);
  ASSERT_NE(file.reader, nullptr);
  for (Device* device : client->addressable_devices()) {
    const std::string id = std::to_string(device->id());
    SCOPED_TRACE(id);
    const TrackView* stream = file.Track("device " + id + " (CPU) stream");
    ASSERT_NE(stream, nullptr);
    std::map<std::string, int> ops;
    for (const tf::Slice& s : stream->events.slices) ++ops[file.Name(s.name)];
    EXPECT_EQ(ops["replica/dot"], kSteps) << ::testing::PrintToString(ops);
    const TrackView* transfers = file.Track("device " + id + " transfers");
    ASSERT_NE(transfers, nullptr);
    int copies = 0;
    for (uint32_t i = 0; i < transfers->events.slices.size(); ++i) {
      if (file.Name(transfers->events.slices[i].name) != "CopyFromDevice") {
        continue;
      }
      ++copies;
      EXPECT_EQ(file.IntArg(*transfers, i, "bytes"), 64 * 64 * 4);
      EXPECT_EQ(file.IntArg(*transfers, i, "from_device"), 1 - device->id());
    }
    EXPECT_EQ(copies, kSteps);
  }
}

TEST(ProfilerIntegration, NothingIsRecordedOutsideASession) {
  auto client = testing::MakeClient();
  ASSERT_NE(client, nullptr);
  GraphBuilder b("idle");
  Value x = b.Parameter(F32Shape({4}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({b.Exp(x)}));
  // No session: the observer is installed but returns at once.
  auto results = testing::Run(*client, graph, {Literal(F32Shape({4}))});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_FALSE(profiler::IsTracing());
}

}  // namespace
}  // namespace podscope::runtime
