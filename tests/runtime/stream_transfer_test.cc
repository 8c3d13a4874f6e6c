// Device streams and asynchronous host<->device transfers.

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pjrt/device_runtime.h"
#include "podscope/runtime/ir/builder.h"
#include "podscope/runtime/pjrt/client.h"
#include "test_util.h"

namespace podscope::runtime {
namespace {

using testing::F32;
using ::testing::HasSubstr;

// Holds a device's stream until Release(), so tests can observe work that
// has been enqueued but not run.
class StreamGate {
 public:
  explicit StreamGate(Device* device) {
    std::shared_future<void> opened = open_.get_future().share();
    device->runtime()->stream().Enqueue([opened] { opened.wait(); });
  }
  ~StreamGate() { Release(); }
  void Release() {
    if (!released_) open_.set_value();
    released_ = true;
  }

 private:
  std::promise<void> open_;
  bool released_ = false;
};

TEST(TransferTest, RoundTripPreservesValues) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.5f};
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr buffer, client->BufferFromLiteral(F32({2, 3}, values), device));
  EXPECT_EQ(buffer->shape(), F32Shape({2, 3}));
  EXPECT_EQ(buffer->device(), device);
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Literal back, buffer->ToLiteral().Await());
  EXPECT_EQ(back.ToVector<float>(), values);

  std::vector<int32_t> ints = {4, -5, 6};
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr int_buffer,
      client->BufferFromHost(ints.data(), I32Shape({3}), device,
                             HostBufferSemantics::kImmutableOnlyDuringCall));
  std::vector<int32_t> out(3, 0);
  ASSERT_TRUE(int_buffer->ToHost(out.data(), 12).Await().ok());
  EXPECT_EQ(out, ints);
}

TEST(TransferTest, TransfersReturnBeforeTheDeviceRunsThem) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  StreamGate gate(device);
  std::vector<float> host = {1, 2, 3, 4};
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr buffer,
      client->BufferFromHost(host.data(), F32Shape({4}), device,
                             HostBufferSemantics::kImmutableOnlyDuringCall));
  // The caller may reuse its memory at once under this semantics.
  host.assign(4, -1.0f);
  Future<Literal> read = buffer->ToLiteral();
  EXPECT_FALSE(buffer->ready().IsReady());
  EXPECT_FALSE(read.IsReady());
  gate.Release();
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Literal back, read.Await());
  EXPECT_EQ(back.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(TransferTest, WorkOnAStreamCompletesInEnqueueOrder) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  std::mutex mu;
  std::vector<int> order;
  std::vector<BufferPtr> buffers;
  std::vector<Literal> reads(20, Literal(F32Shape({256})));
  std::vector<Event> done;
  for (int i = 0; i < 20; ++i) {
    Literal literal(F32Shape({256}));
    for (float& v : literal.mutable_data<float>()) v = static_cast<float>(i);
    PODSCOPE_ASSERT_OK_AND_ASSIGN(BufferPtr buffer,
                                  client->BufferFromLiteral(literal, device));
    buffer->ready().OnReady([&, i](const absl::Status&) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
    });
    buffers.push_back(buffer);
  }
  for (int i = 0; i < 20; ++i) {
    done.push_back(
        buffers[i]->ToHost(reads[i].untyped_data(), reads[i].size_bytes()));
    done.back().OnReady([&, i](const absl::Status&) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(100 + i);
    });
  }
  for (const Event& event : done) ASSERT_TRUE(event.Await().ok());
  std::vector<int> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(i);
  for (int i = 0; i < 20; ++i) expected.push_back(100 + i);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, expected);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(reads[i].data<float>()[255], static_cast<float>(i));
  }
}

TEST(TransferTest, ToHostIntoTooSmallMemoryIsAnError) {
  auto client = testing::MakeClient();
  Device* device = client->addressable_devices()[0];
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr buffer,
      client->BufferFromLiteral(Literal(F32Shape({8})), device));
  float small[2];
  absl::Status status = buffer->ToHost(small, sizeof(small)).Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("f32[8]"));
}

TEST(TransferTest, ATransferErrorFailsTheWorkThatUsesIt) {
  ClientOptions options;
  options.device_memory_limit_bytes = 256;
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto client, CreateClient(options));
  Device* device = client->addressable_devices()[0];
  GraphBuilder b("double");
  Value x = b.Parameter(F32Shape({128}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({b.Add(x, x)}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr input,
      client->BufferFromLiteral(Literal(F32Shape({128})), device));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto outputs,
                                executable->Execute({input}, device));
  absl::Status status = outputs[0]->ToLiteral().Await().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("Out of memory on CPU:0"));
}

TEST(TransferTest, CopyToDeviceMovesDataBetweenStreams) {
  auto client = testing::MakeClient(2);
  Device* d0 = client->addressable_devices()[0];
  Device* d1 = client->addressable_devices()[1];
  StreamGate gate(d0);  // the copy must wait for the source transfer
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr source, client->BufferFromLiteral(F32({3}, {1, 2, 3}), d0));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(BufferPtr copy, source->CopyToDevice(d1));
  EXPECT_EQ(copy->device(), d1);
  gate.Release();
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Literal back, copy->ToLiteral().Await());
  EXPECT_EQ(back.ToVector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(TransferTest, ExecuteRejectsArgumentsOnAnotherDevice) {
  auto client = testing::MakeClient(2);
  Device* d0 = client->addressable_devices()[0];
  Device* d1 = client->addressable_devices()[1];
  GraphBuilder b("neg");
  Value x = b.Parameter(F32Shape({2}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph, b.Build({b.Neg(x)}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(auto executable, client->Compile(graph));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(
      BufferPtr arg, client->BufferFromLiteral(F32({2}, {1, 2}), d1));
  auto outputs = executable->Execute({arg}, d0);
  ASSERT_FALSE(outputs.ok());
  EXPECT_THAT(outputs.status().message(), HasSubstr("lives on CPU:1"));
  auto wrong_shape = executable->Execute(
      {client->BufferFromLiteral(F32({3}, {1, 2, 3}), d0).value()}, d0);
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_THAT(wrong_shape.status().message(),
              HasSubstr("argument 0 has shape f32[3] but parameter 0 "
                        "expects f32[2]"));
}

TEST(TransferTest, ManyHostThreadsShareTwoDevices) {
  auto client = testing::MakeClient(2);
  GraphBuilder b("scale");
  Value x = b.Parameter(F32Shape({64}));
  PODSCOPE_ASSERT_OK_AND_ASSIGN(Graph graph,
                                b.Build({b.Mul(x, b.Full(F32Shape({64}), 2))}));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Device* device = client->addressable_devices()[t % 2];
      auto executable = client->Compile(graph);
      if (!executable.ok()) {
        ++failures;
        return;
      }
      for (int i = 0; i < 25; ++i) {
        Literal input(F32Shape({64}));
        for (float& v : input.mutable_data<float>()) v = t * 100 + i;
        auto buffer = client->BufferFromLiteral(input, device);
        auto outputs = (*executable)->Execute({*buffer}, device);
        auto result = (*outputs)[0]->ToLiteral().Await();
        if (!result.ok() || result->data<float>()[63] != 2.0f * (t * 100 + i)) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(client->compile_cache_stats().misses, 1);
}

TEST(EventTest, CallbacksAndWaitersSeeTheStatus) {
  Event event;
  std::atomic<int> seen{0};
  event.OnReady([&](const absl::Status& s) {
    if (absl::IsCancelled(s)) ++seen;
  });
  std::thread waiter([&] {
    if (absl::IsCancelled(event.Await())) ++seen;
  });
  event.Set(absl::CancelledError("stop"));
  event.Set(absl::OkStatus());  // ignored: an event completes once
  waiter.join();
  event.OnReady([&](const absl::Status& s) {
    if (absl::IsCancelled(s)) ++seen;
  });
  EXPECT_EQ(seen.load(), 3);
  EXPECT_TRUE(Event::Ready().Await().ok());
}

}  // namespace
}  // namespace podscope::runtime
