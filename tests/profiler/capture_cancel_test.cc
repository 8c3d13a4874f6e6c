// Cancelling a capture (CaptureOptions::cancel) against a real profiler
// server on loopback in this process: the capture ends early and the file
// is complete.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/server.h"
#include "trace_file.h"
#include "workload.h"

namespace podscope::profiler {
namespace {

using testing::FreshDir;
using testing::ReadTraceFile;
using testing::Workload;

TEST(CaptureCancel, EndsALongCaptureEarlyWithACompleteFile) {
  auto server = StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  Workload work;
  std::atomic<bool> cancel{false};
  std::atomic<int> streaming_seen{0};
  CaptureOptions o;
  o.workers = {(*server)->address()};
  o.logdir = FreshDir("cancel-long");
  o.duration_ms = 60'000;
  o.session = "cancelled";
  o.cancel = &cancel;
  o.progress = [&](const CaptureProgress& p) {
    if (p.streaming > 0) streaming_seen = 1;
  };
  std::thread canceller([&] {
    // Cancel once the worker records and has sent something.
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!streaming_seen.load() &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto result = CaptureWorkers(o);
  const auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->cancelled);
  EXPECT_LT(took, std::chrono::seconds(20));
  ASSERT_EQ(result->workers.size(), 1u);
  const WorkerResult& w = result->workers[0];
  EXPECT_TRUE(w.ok) << w.error;
  EXPECT_EQ(result->answered(), 1);
  auto file = ReadTraceFile(w.path);
  ASSERT_NE(file.reader, nullptr);
  EXPECT_TRUE(file.reader->report().has_index);
  EXPECT_TRUE(file.reader->report().skipped.empty());
  EXPECT_GT(file.SlicesNamed("work").size(), 10u);
  EXPECT_TRUE(std::filesystem::exists(result->manifest_path));
}

TEST(CaptureCancel, BeforeRecordingAsksNoWorkerToRecord) {
  auto server = StartServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  std::atomic<bool> cancel{true};
  CaptureOptions o;
  o.workers = {(*server)->address()};
  o.logdir = FreshDir("cancel-first");
  o.duration_ms = 60'000;
  o.cancel = &cancel;
  const auto start = std::chrono::steady_clock::now();
  auto result = CaptureWorkers(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_TRUE(result->cancelled);
  ASSERT_EQ(result->workers.size(), 1u);
  EXPECT_FALSE(result->workers[0].ok);
  EXPECT_NE(result->workers[0].error.find("cancelled"), std::string::npos)
      << result->workers[0].error;
  EXPECT_TRUE(result->workers[0].path.empty());
}

}  // namespace
}  // namespace podscope::profiler
