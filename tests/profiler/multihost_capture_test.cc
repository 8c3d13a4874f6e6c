// Captures of real worker processes: several on loopback, one killed in
// the middle, and workers on separate network hosts (network namespaces
// joined by veth pairs) whose clocks are skewed by seconds and drift by
// ~100 ppm, lined up again by the capture's clock measurements.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "gtest/gtest.h"
#include "podscope/profiler/capture.h"
#include "podscope/profiler/clock.h"
#include "podscope/trace_format/clock_model.h"
#include "skewed_hosts.h"
#include "trace_file.h"

#ifndef PODSCOPE_CAPTURE_WORKER
#error "PODSCOPE_CAPTURE_WORKER must name the worker binary"
#endif

namespace podscope::profiler {
namespace {

using testing::ChildProcess;
using testing::FreshDir;
using testing::ReadTraceFile;

std::unique_ptr<ChildProcess> StartWorker(
    const std::vector<std::string>& prefix,
    const std::vector<std::string>& args, const std::vector<std::string>& env,
    int* port) {
  auto child = testing::StartCaptureWorker(PODSCOPE_CAPTURE_WORKER, prefix,
                                           args, env, port);
  if (child == nullptr) ADD_FAILURE() << "a worker did not start";
  return child;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MultiProcessCapture, AWorkerKilledMidCaptureLeavesTheOthersComplete) {
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    int port = 0;
    workers.push_back(StartWorker({}, {"--port", "0"}, {}, &port));
    ASSERT_NE(workers.back(), nullptr);
    addrs.push_back("127.0.0.1:" + std::to_string(port));
  }
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = FreshDir("killed");
  o.session = "with-a-casualty";
  o.duration_ms = 1500;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    workers[1]->Kill();
  });
  auto result = CaptureWorkers(o);
  killer.join();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->workers.size(), 3u);
  EXPECT_EQ(result->answered(), 2);
  for (int i : {0, 2}) {
    const WorkerResult& w = result->workers[i];
    EXPECT_TRUE(w.ok) << w.error;
    auto file = ReadTraceFile(w.path);
    ASSERT_NE(file.reader, nullptr);
    EXPECT_TRUE(file.reader->report().has_index);
    EXPECT_GT(file.SlicesNamed("step").size(), 500u);
  }
  const WorkerResult& dead = result->workers[1];
  EXPECT_FALSE(dead.ok);
  EXPECT_NE(dead.error.find(addrs[1]), std::string::npos) << dead.error;
  // What it streamed before dying is readable.
  auto partial = ReadTraceFile(dead.path);
  ASSERT_NE(partial.reader, nullptr) << dead.path;
  EXPECT_FALSE(partial.reader->report().has_index);
  EXPECT_GT(partial.SlicesNamed("step").size(), 100u);
  const std::string manifest = ReadAll(result->manifest_path);
  EXPECT_NE(manifest.find("\"answered\": 2"), std::string::npos);
  EXPECT_NE(manifest.find(addrs[1] + "\", \"ok\": false"), std::string::npos)
      << manifest;
}

TEST(MultiHostCapture, SkewedClocksOnThreeHostsLineUp) {
  // CI runs as root, so this runs there; PODSCOPE_REQUIRE_NETNS=1 makes a
  // machine that cannot make namespaces a failure instead of a skip.
  PODSCOPE_SKIP_WITHOUT_NETWORK_NAMESPACES();
  testing::NetworkHosts hosts(3, "mh");
  ASSERT_TRUE(hosts.ok()) << "could not set up network namespaces";
  // Every aligned mark within this of when it really happened (the lean
  // probe path's target on a loaded two-core machine).
  constexpr int64_t kMaxErrorNs = 20'000;
  // Seconds of offset and ~100 ppm of drift, as separate hosts may have.
  const int64_t offsets[] = {3'000'000'000, -7'500'000'000, 12'250'000'000};
  const double drifts[] = {100, -100, 60};
  const std::string token = "multihost-token";
  std::vector<std::unique_ptr<ChildProcess>> workers;
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) {
    int port = 0;
    workers.push_back(StartWorker(
        {"ip", "netns", "exec", hosts.name(i)},
        {"--port", "9012", "--bind", hosts.address(i), "--token", token},
        {"PODSCOPE_TEST_CLOCK_OFFSET_NS=" + std::to_string(offsets[i]),
         "PODSCOPE_TEST_CLOCK_DRIFT_PPM=" + std::to_string(drifts[i])},
        &port));
    ASSERT_NE(workers.back(), nullptr);
    EXPECT_EQ(port, 9012);
    addrs.push_back(hosts.address(i) + ":9012");
  }
  CaptureOptions o;
  o.workers = addrs;
  o.logdir = FreshDir("multihost");
  o.session = "skewed";
  o.duration_ms = 2000;
  o.connect.token = token;
  // While the capture runs, every worker marks the same instants.
  constexpr int kMarks = 3;
  std::vector<std::vector<testing::Mark>> marked;
  std::vector<int64_t> mark_times;
  std::thread marker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int64_t t0 = MonotonicNs() + 300'000'000;
    for (int k = 0; k < kMarks; ++k) mark_times.push_back(t0 + k * 250'000'000);
    marked = testing::MarkInstants(workers, t0, kMarks, 250'000'000);
  });
  auto result = CaptureWorkers(o);
  marker.join();
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->answered(), 3)
      << result->workers[0].error << result->workers[1].error
      << result->workers[2].error;

  // aligned[i][k]: worker i's k-th mark on the reference clock.
  std::vector<std::vector<int64_t>> aligned(3);
  for (int i = 0; i < 3; ++i) {
    const WorkerResult& w = result->workers[i];
    // The measured offset is the injected one (reference = local + offset),
    // and the drift is seen.
    EXPECT_NEAR(static_cast<double>(w.clock[0].offset_ns),
                static_cast<double>(-offsets[i]), 5e6);
    // The line is fitted to measurements made all through the capture
    // (one every 100 ms on the probe port), not only before and after.
    EXPECT_GE(w.clock_probes, static_cast<int>(o.duration_ms / 100) - 2)
        << w.address;
    // The drift from the first and last points of the fit is right within
    // what their uncertainties allow.
    ASSERT_GE(w.clock.size(), 2u);
    const ClockEstimate& first = w.clock.front();
    const ClockEstimate& last = w.clock.back();
    const double span_s =
        static_cast<double>(last.local_ns - first.local_ns) / 1e9;
    const double drift_tolerance_ppm =
        static_cast<double>(first.uncertainty_ns + last.uncertainty_ns) / 1e3 /
            span_s +
        5;
    EXPECT_NEAR(w.drift_ppm, drifts[i], drift_tolerance_ppm) << w.address;
    const std::vector<int64_t> marks = testing::AlignedMarks(w.path);
    ASSERT_EQ(marks.size(), static_cast<size_t>(kMarks)) << w.path;
    const auto file = ReadTraceFile(w.path);
    ASSERT_NE(file.reader, nullptr);
    const trace_format::ClockModel model(file.reader->clock());
    for (int k = 0; k < kMarks; ++k) {
      ASSERT_GT(marked[i][k].before, 0) << "worker " << i << " mark " << k;
      // The event happened between the worker's two readings of the real
      // clock, which is the capture client's reference clock: the
      // alignment error is the distance to that interval.
      const int64_t error = testing::AlignmentError(marks[k], marked[i][k]);
      // The uncertainty the file states where the mark lies holds.
      const int64_t stated =
          model.UncertaintyAt(marks[k] - w.clock[0].offset_ns);
      std::printf(
          "worker %d mark %d: error %.1f us, stated uncertainty %.1f us\n", i,
          k, static_cast<double>(error) / 1e3,
          static_cast<double>(stated) / 1e3);
      EXPECT_LE(error, kMaxErrorNs) << w.address << " mark " << k;
      EXPECT_LE(error, stated) << w.address << " mark " << k;
      aligned[i].push_back(marks[k]);
    }
  }
  // The marks lie within 100 us of each other once aligned, apart from
  // how late the scheduler let each worker record them: compare each
  // aligned mark with the interval in which it really happened.
  for (int k = 0; k < kMarks; ++k) {
    std::vector<int64_t> residual;
    for (int i = 0; i < 3; ++i) {
      // How far outside the interval in which the mark really happened the
      // aligned mark lies (signed; 0 inside it).
      const testing::Mark& m = marked[i][k];
      residual.push_back(aligned[i][k] < m.before  ? aligned[i][k] - m.before
                         : aligned[i][k] > m.after ? aligned[i][k] - m.after
                                                   : 0);
      std::printf(
          "mark %d worker %d: late %lld us, residual %lld us\n", k, i,
          static_cast<long long>((marked[i][k].before - mark_times[k]) / 1000),
          static_cast<long long>(residual.back() / 1000));
    }
    const auto [lo, hi] = std::minmax_element(residual.begin(), residual.end());
    EXPECT_LT(*hi - *lo, 100'000) << "mark " << k;
  }
  for (auto& w : workers) w->WriteLine("quit");
}

}  // namespace
}  // namespace podscope::profiler
