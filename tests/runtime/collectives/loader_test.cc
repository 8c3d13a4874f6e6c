// The parallel device loader: batches in order, prefetch bounded, overlap
// with the consumer's compute, errors and the end delivered in order, a
// clean shutdown, and its work in a trace.

#include "podscope/runtime/loader.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "podscope/profiler/session.h"
#include "podscope/runtime/pjrt/client.h"
#include "trace_file.h"

namespace podscope::runtime {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<Client> MakeClient(int devices) {
  ClientOptions options;
  options.num_devices = devices;
  auto client = CreateClient(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// Batch i: per device d, one i32[4] array filled with 10 * i + d.
ParallelLoader::Producer Numbered(int devices, int64_t count) {
  return [devices, count](int64_t i) -> absl::StatusOr<ParallelLoader::Batch> {
    if (i >= count) return absl::OutOfRangeError("end of data");
    ParallelLoader::Batch batch(devices);
    for (int d = 0; d < devices; ++d) {
      auto literal = Literal::FromVector<int32_t>(
          {4}, std::vector<int32_t>(4, static_cast<int32_t>(10 * i + d)));
      if (!literal.ok()) return literal.status();
      batch[d].push_back(*std::move(literal));
    }
    return batch;
  };
}

TEST(ParallelLoader, DeliversBatchesInOrderToEveryDeviceThenTheEnd) {
  auto client = MakeClient(2);
  ASSERT_NE(client, nullptr);
  LoaderOptions options;
  options.threads = 3;  // several threads, still in order
  options.prefetch = 3;
  auto loader = ParallelLoader::Create(
      client.get(), client->addressable_devices(), Numbered(2, 12), options);
  ASSERT_TRUE(loader.ok()) << loader.status();
  for (int64_t i = 0; i < 12; ++i) {
    auto batch = (*loader)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->size(), 2u);
    for (int d = 0; d < 2; ++d) {
      const BufferPtr& b = (*batch)[d][0];
      EXPECT_EQ(b->device(), client->addressable_devices()[d]);
      auto literal = b->ToLiteral().Await();
      ASSERT_TRUE(literal.ok());
      EXPECT_EQ(literal->data<int32_t>()[0], 10 * i + d) << "batch " << i;
    }
  }
  EXPECT_TRUE(absl::IsOutOfRange((*loader)->Next().status()));
  EXPECT_TRUE(absl::IsOutOfRange((*loader)->Next().status()));
}

TEST(ParallelLoader, PrefetchIsBoundedAndOverlapsTheConsumer) {
  auto client = MakeClient(1);
  ASSERT_NE(client, nullptr);
  std::mutex mu;
  std::vector<Clock::time_point> started(8);
  std::atomic<int> produced{0};
  auto inner = Numbered(1, 8);
  LoaderOptions options;
  options.prefetch = 2;
  auto loader = ParallelLoader::Create(
      client.get(), client->addressable_devices(),
      [&](int64_t i) {
        {
          // The loader also asks for the index past the end (the producer
          // says OutOfRange there), so only the 8 real batches are timed.
          std::lock_guard<std::mutex> lock(mu);
          if (i < static_cast<int64_t>(started.size())) {
            started[i] = Clock::now();
          }
        }
        ++produced;
        return inner(i);
      },
      options);
  ASSERT_TRUE(loader.ok());
  // Nobody consumes: the loader stops at the prefetch depth.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(produced.load(), 2);
  std::vector<Clock::time_point> computed(8);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE((*loader)->Next().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // "compute"
    computed[i] = Clock::now();
  }
  // Batch i + 1 was prepared while batch i was being computed on.
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i + 1 < 8; ++i) {
    EXPECT_LT(started[i + 1], computed[i]) << "batch " << i + 1;
  }
}

TEST(ParallelLoader, AProducerErrorIsDeliveredInOrder) {
  auto client = MakeClient(1);
  ASSERT_NE(client, nullptr);
  auto inner = Numbered(1, 100);
  auto loader = ParallelLoader::Create(
      client.get(), client->addressable_devices(),
      [&](int64_t i) -> absl::StatusOr<ParallelLoader::Batch> {
        if (i == 3) return absl::DataLossError("corrupt record 3");
        return inner(i);
      });
  ASSERT_TRUE(loader.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*loader)->Next().ok()) << i;
  auto failed = (*loader)->Next();
  EXPECT_TRUE(absl::IsDataLoss(failed.status())) << failed.status();
  EXPECT_EQ(failed.status().message(), "corrupt record 3");
}

TEST(ParallelLoader, CloseStopsTheThreadsWhileAProducerIsBusy) {
  auto client = MakeClient(1);
  ASSERT_NE(client, nullptr);
  std::atomic<int> produced{0};
  auto inner = Numbered(1, 1000);
  auto loader = ParallelLoader::Create(
      client.get(), client->addressable_devices(), [&](int64_t i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ++produced;
        return inner(i);
      });
  ASSERT_TRUE(loader.ok());
  ASSERT_TRUE((*loader)->Next().ok());
  (*loader)->Close();
  const int after_close = produced.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(produced.load(), after_close);
  EXPECT_TRUE(absl::IsCancelled((*loader)->Next().status()));
  loader->reset();  // the destructor after Close is fine
}

TEST(ParallelLoader, BadOptionsAreRejected) {
  auto client = MakeClient(1);
  ASSERT_NE(client, nullptr);
  LoaderOptions options;
  options.prefetch = 0;
  auto loader = ParallelLoader::Create(
      client.get(), client->addressable_devices(), Numbered(1, 1), options);
  EXPECT_TRUE(absl::IsInvalidArgument(loader.status()));
}

TEST(ParallelLoader, ItsWorkIsInTheTrace) {
  auto client = MakeClient(1);
  ASSERT_NE(client, nullptr);
  const std::string dir = profiler::testing::FreshDir("loader_trace");
  ASSERT_TRUE(profiler::StartTrace(dir).ok());
  {
    auto loader = ParallelLoader::Create(
        client.get(), client->addressable_devices(), Numbered(1, 4));
    ASSERT_TRUE(loader.ok());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE((*loader)->Next().ok());
  }
  ASSERT_TRUE(client->addressable_devices()[0]->WaitUntilIdle().ok());
  auto path = profiler::StopTrace();
  ASSERT_TRUE(path.ok()) << path.status();
  auto file = profiler::testing::ReadTraceFile(*path);
  ASSERT_NE(file.reader, nullptr);
  const auto* thread = file.Track("loader 0");
  ASSERT_NE(thread, nullptr);
  int prepares = 0;
  for (const auto& s : thread->events.slices) {
    prepares += file.Name(s.name) == "loader_prepare";
  }
  // Four batches, and possibly the call that found the end of the data.
  EXPECT_GE(prepares, 4);
  EXPECT_LE(prepares, 5);
  const auto* transfers = file.Track("device 0 transfers");
  ASSERT_NE(transfers, nullptr);
  int to_device = 0;
  for (const auto& s : transfers->events.slices) {
    to_device += file.Name(s.name) == "TransferToDevice";
  }
  EXPECT_GE(to_device, 4);
}

}  // namespace
}  // namespace podscope::runtime
