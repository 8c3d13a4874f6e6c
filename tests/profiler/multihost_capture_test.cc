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
    const std::vector<std::string>& prefix, const std::vector<std::string>& args,
    const std::vector<std::string>& env, int* port) {
  std::vector<std::string> argv = prefix;
  argv.push_back(PODSCOPE_CAPTURE_WORKER);
  argv.insert(argv.end(), args.begin(), args.end());
  auto child = std::make_unique<ChildProcess>(argv, env);
  std::string line;
  if (!child->ReadLine(&line, 20000) || line.rfind("port ", 0) != 0) {
    ADD_FAILURE() << "worker did not start: '" << line << "'";
    return nullptr;
  }
  *port = std::atoi(line.c_str() + 5);
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

// Network namespaces need root and iproute2; CI runs as root.
bool CanMakeNamespaces() {
  return geteuid() == 0 && std::system("ip netns list >/dev/null 2>&1") == 0;
}

class Namespaces {
 public:
  explicit Namespaces(int n) {
    const int tag = getpid() % 100000;
    subnet_ = 200 + getpid() % 50;
    for (int i = 1; i <= n; ++i) {
      const std::string ns = "podscope-" + std::to_string(tag) + "-" + std::to_string(i);
      const std::string host_if = "psh" + std::to_string(tag) + "x" + std::to_string(i);
      const std::string ns_if = "psn" + std::to_string(tag) + "x" + std::to_string(i);
      const std::string net = "10." + std::to_string(subnet_) + "." + std::to_string(i);
      const std::string cmd =
          "set -e; ip netns add " + ns + "; ip link add " + host_if +
          " type veth peer name " + ns_if + "; ip link set " + ns_if +
          " netns " + ns + "; ip addr add " + net + ".1/24 dev " + host_if +
          "; ip link set " + host_if + " up; ip netns exec " + ns +
          " ip addr add " + net + ".2/24 dev " + ns_if + "; ip netns exec " +
          ns + " ip link set " + ns_if + " up; ip netns exec " + ns +
          " ip link set lo up";
      names_.push_back(ns);
      host_ifs_.push_back(host_if);
      if (std::system(cmd.c_str()) != 0) {
        ok_ = false;
        return;
      }
    }
  }
  ~Namespaces() {
    for (size_t i = 0; i < names_.size(); ++i) {
      std::system(("ip link del " + host_ifs_[i] + " >/dev/null 2>&1").c_str());
      std::system(("ip netns del " + names_[i] + " >/dev/null 2>&1").c_str());
    }
  }
  bool ok() const { return ok_; }
  const std::string& name(int i) const { return names_[i]; }
  std::string address(int i) const {
    return "10." + std::to_string(subnet_) + "." + std::to_string(i + 1) + ".2";
  }

 private:
  bool ok_ = true;
  int subnet_ = 0;
  std::vector<std::string> names_, host_ifs_;
};

TEST(MultiHostCapture, SkewedClocksOnThreeHostsLineUp) {
  if (!CanMakeNamespaces()) {
    GTEST_SKIP() << "needs root and iproute2 for network namespaces";
  }
  Namespaces hosts(3);
  ASSERT_TRUE(hosts.ok()) << "could not set up network namespaces";
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
  std::vector<std::vector<std::pair<int64_t, int64_t>>> marked(
      3, std::vector<std::pair<int64_t, int64_t>>(kMarks));
  std::vector<int64_t> mark_times;
  std::thread marker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const int64_t t0 = MonotonicNs() + 300'000'000;
    for (int k = 0; k < kMarks; ++k) mark_times.push_back(t0 + k * 250'000'000);
    for (auto& w : workers) {
      for (int64_t t : mark_times) w->WriteLine("mark " + std::to_string(t));
    }
    for (int i = 0; i < 3; ++i) {
      for (int k = 0; k < kMarks; ++k) {
        std::string line;
        if (!workers[i]->ReadLine(&line, 5000)) break;
        long long a = 0, b = 0;
        std::sscanf(line.c_str(), "marked %lld %lld", &a, &b);
        marked[i][k] = {a, b};
      }
    }
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
    // The drift from the two measurements is right within what their
    // uncertainties allow.
    ASSERT_EQ(w.clock.size(), 2u);
    const double span_s =
        static_cast<double>(w.clock[1].local_ns - w.clock[0].local_ns) / 1e9;
    const double drift_tolerance_ppm =
        static_cast<double>(w.clock[0].uncertainty_ns + w.clock[1].uncertainty_ns) /
            1e3 / span_s + 5;
    EXPECT_NEAR(w.drift_ppm, drifts[i], drift_tolerance_ppm) << w.address;
    auto file = ReadTraceFile(w.path);
    ASSERT_NE(file.reader, nullptr);
    trace_format::ClockModel clock(file.reader->clock());
    ASSERT_TRUE(clock.has_reference());
    std::vector<int64_t> local;
    for (const auto& t : file.tracks) {
      for (const auto& inst : t.events.instants) {
        if (file.Name(inst.name) == "sync_mark") local.push_back(inst.ts_ns);
      }
    }
    std::sort(local.begin(), local.end());
    ASSERT_EQ(local.size(), static_cast<size_t>(kMarks)) << w.path;
    for (int k = 0; k < kMarks; ++k) {
      ASSERT_GT(marked[i][k].first, 0) << "worker " << i << " mark " << k;
      const int64_t reference = clock.ToReference(local[k]);
      // The event happened between the worker's two readings of the real
      // clock, which is the capture client's reference clock: the
      // alignment error is the distance to that interval.
      const int64_t error =
          std::max<int64_t>({marked[i][k].first - reference,
                             reference - marked[i][k].second, 0});
      EXPECT_LT(error, 100'000) << w.address << " mark " << k;
      aligned[i].push_back(reference);
    }
  }
  // The marks lie within 100 us of each other once aligned, apart from
  // how late the scheduler let each worker record it: compare the aligned
  // marks with where each really happened.
  for (int k = 0; k < kMarks; ++k) {
    std::vector<int64_t> residual;
    for (int i = 0; i < 3; ++i) {
      const int64_t mid = marked[i][k].first +
                          (marked[i][k].second - marked[i][k].first) / 2;
      residual.push_back(aligned[i][k] - mid);
      std::printf("mark %d worker %d: late %lld us, residual %lld us\n", k, i,
                  static_cast<long long>((marked[i][k].first - mark_times[k]) / 1000),
                  static_cast<long long>(residual.back() / 1000));
    }
    const auto [lo, hi] = std::minmax_element(residual.begin(), residual.end());
    EXPECT_LT(*hi - *lo, 100'000) << "mark " << k;
  }
  for (auto& w : workers) w->WriteLine("quit");
}

}  // namespace
}  // namespace podscope::profiler
