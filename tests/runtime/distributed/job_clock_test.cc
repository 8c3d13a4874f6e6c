// Job-wide clocks and whole-job capture: ranks with skewed clocks write
// their own trace files, which line up on rank 0's clock within the stated
// uncertainty; across three network namespaces (one launcher each, joined
// by --rdzv_endpoint) the job runs and `podscope capture --job` records
// every rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../../common/netns.h"
#include "job_traces.h"
#include "process.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using testing::Process;

const std::string kPodscope = PODSCOPE_BIN;
const std::string kWorker = DIST_WORKER;

std::string FreshDir(const std::string& name) {
  return testing::FreshDir("podscope-dist-test", name);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Rank r's marks, aligned by its file's offsets (measured every heartbeat
// or few, so that marks between them are interpolated with the drift), lie
// in the interval in which they really happened (rank 0's clock is unskewed, so
// the reference is CLOCK_MONOTONIC) within the file's stated uncertainty,
// which is a bound (drift between measurements included), and within 20 us.
void ExpectAligned(
    const std::map<int, testing::RankTrace>& traces,
    const std::map<int, std::map<int, testing::PrintedMark>>& marks, int ranks,
    int count, int64_t skew_ns) {
  ASSERT_EQ(traces.size(), static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const testing::RankTrace& t = traces.at(r);
    EXPECT_EQ(t.world, ranks) << t.path;
    ASSERT_EQ(t.aligned_marks.size(), static_cast<size_t>(count)) << t.path;
    ASSERT_GT(t.clock.offsets_size(), 0) << t.path;
    EXPECT_EQ(t.clock.offsets(0).reference(), "rank 0");
    // reference = local + offset, and rank r's clock is r * skew ahead.
    EXPECT_NEAR(static_cast<double>(
                    t.clock.offsets(t.clock.offsets_size() - 1).offset_ns()),
                static_cast<double>(-r * skew_ns), 5e6)
        << t.path;
    for (const auto& o : t.clock.offsets()) {
      std::printf("rank %d offset at %lld: %lld +- %lld ns\n", r,
                  static_cast<long long>(o.local_monotonic_ns()),
                  static_cast<long long>(o.offset_ns()),
                  static_cast<long long>(o.uncertainty_ns()));
    }
    for (int k = 0; k < count; ++k) {
      ASSERT_TRUE(marks.count(r) && marks.at(r).count(k)) << r << " " << k;
      const int64_t outside =
          testing::OutsideBy(t.aligned_marks[k], marks.at(r).at(k));
      std::printf("rank %d mark %d: %lld ns outside, uncertainty %lld ns\n", r,
                  k, static_cast<long long>(outside),
                  static_cast<long long>(t.uncertainty[k]));
      // The stated uncertainty holds, and the error is within 20 us: the
      // ranks probe rank 0 on the lean UDP path.
      EXPECT_LE(outside, t.uncertainty[k]) << "rank " << r << " mark " << k;
      // Honest, and not inflated past use.
      EXPECT_LE(t.uncertainty[k], 200'000) << "rank " << r << " mark " << k;
      EXPECT_LE(outside, 20'000) << "rank " << r << " mark " << k;
      // Skews of seconds are gone.
      EXPECT_LT(outside, 5'000'000);
    }
  }
}

// Waits for `ranks` "ready" lines of the job's workers; the coordinator's
// address they print (empty when they did not all say it).
std::string WaitForRanks(Process& launcher, int ranks) {
  std::string coordinator, line;
  int ready = 0;
  const std::regex re(R"(ready rank \d+ pid \d+ coordinator (\S+))");
  while (ready < ranks && launcher.ReadLine(&line, 60000)) {
    std::smatch m;
    if (std::regex_search(line, m, re)) {
      coordinator = m[1];
      ++ready;
    }
  }
  return ready == ranks ? coordinator : "";
}

TEST(JobClock, PerRankTracesLineUpOnRankZerosClock) {
  const std::string logdir = FreshDir("clock");
  constexpr int64_t kSkew = 1'500'000'000;
  Process launcher({kPodscope, "launch", "--nproc_per_node", "3", kWorker,
                    "job", "--logdir", logdir, "--marks", "3", "--skew_ns",
                    std::to_string(kSkew), "--drift_ppm", "40",
                    "--mark_delay_ms", "2500", "--run_ms", "2500"});
  const int status = launcher.Wait(120000);
  ASSERT_TRUE(WIFEXITED(status)) << launcher.output();
  ASSERT_EQ(WEXITSTATUS(status), 0) << launcher.output();
  ExpectAligned(testing::ReadRankTraces(logdir + "/run"),
                testing::ParseMarks(launcher.output()), 3, 3, kSkew);
  EXPECT_THAT(launcher.output(), HasSubstr("[rank 2] done rank 2"));
}

TEST(CaptureJob, EveryRankOnLoopbackByTheCoordinatorsAddress) {
  const std::string logdir = FreshDir("loopback-job");
  const std::string capdir = FreshDir("loopback-capture");
  Process launcher({kPodscope, "launch", "--nproc_per_node", "2", kWorker,
                    "job", "--run_ms", "5000"});
  const std::string coordinator = WaitForRanks(launcher, 2);
  ASSERT_FALSE(coordinator.empty()) << launcher.output();
  Process capture({kPodscope, "capture", "--job", coordinator, "--logdir",
                   capdir, "--duration_ms", "800", "--session", "loop"});
  const int cap_status = capture.Wait(60000);
  EXPECT_TRUE(WIFEXITED(cap_status) && WEXITSTATUS(cap_status) == 0)
      << capture.output();
  EXPECT_THAT(capture.output(), HasSubstr("2 of 2 workers answered"));
  const std::string manifest = ReadAll(capdir + "/loop/manifest.json");
  EXPECT_THAT(manifest, HasSubstr("\"job\": \"" + coordinator + "\""));
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(std::regex_search(
        manifest, std::regex("\\{\"rank\": " + std::to_string(r) +
                             ", \"address\": ?\"127\\.0\\.0\\.1:")))
        << manifest;
  }
  auto captured = testing::ReadRankTraces(capdir + "/loop");
  ASSERT_EQ(captured.size(), 2u) << manifest;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(captured[r].world, 2);
    EXPECT_TRUE(captured[r].complete) << captured[r].path;
  }
  const int status = launcher.Wait(60000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << launcher.output();
}

// Ranks with a capture root write their own files when the job is
// captured, by steps: every rank's file holds exactly the steps asked for,
// and lines up by the job's clock (rank 1's clock is 1.5 s off).
// Each rank's file of a capture by steps, written by the rank: complete,
// on the job's clock (rank r's offset to rank 0 is -r skews), holding
// exactly `steps`.
void ExpectStepWindows(const std::string& session, int ranks, int64_t skew,
                       const std::set<int64_t>& steps) {
  auto captured = testing::ReadRankTraces(session);
  ASSERT_EQ(captured.size(), static_cast<size_t>(ranks)) << session;
  for (int r = 0; r < ranks; ++r) {
    const testing::RankTrace& t = captured[r];
    EXPECT_TRUE(t.complete) << t.path;
    // The job's clock, not the client's probes.
    ASSERT_GT(t.clock.offsets_size(), 0) << t.path;
    EXPECT_EQ(t.clock.offsets(0).reference(), "rank 0");
    EXPECT_NEAR(static_cast<double>(t.clock.offsets(0).offset_ns()),
                static_cast<double>(-r * skew), 5e6)
        << t.path;
    profiler::testing::TraceFile f = profiler::testing::ReadTraceFile(t.path);
    std::set<int64_t> seen;
    for (const auto& track : f.tracks) {
      for (uint32_t i = 0; i < track.events.slices.size(); ++i) {
        if (f.Name(track.events.slices[i].name) == "train_step") {
          seen.insert(f.IntArg(track, i, "step"));
        }
      }
    }
    EXPECT_EQ(seen, steps) << t.path;
  }
}

TEST(CaptureJob, StepsOnEveryRankWrittenByTheRanks) {
  const std::string root = FreshDir("steps-root");
  constexpr int64_t kSkew = 1'500'000'000;
  Process launcher({"env", "PODSCOPE_CAPTURE_ROOT=" + root, kPodscope, "launch",
                    "--nproc_per_node", "2", kWorker, "job", "--run_ms", "6000",
                    "--step_ms", "40", "--skew_ns", std::to_string(kSkew)});
  const std::string coordinator = WaitForRanks(launcher, 2);
  ASSERT_FALSE(coordinator.empty()) << launcher.output();
  // Step 60 begins about 2.4 s after the ranks started.
  Process capture({kPodscope, "capture", "--job", coordinator, "--logdir", root,
                   "--steps", "60:62", "--session", "by-steps"});
  const int cap_status = capture.Wait(60000);
  EXPECT_TRUE(WIFEXITED(cap_status) && WEXITSTATUS(cap_status) == 0)
      << capture.output();
  EXPECT_THAT(capture.output(), HasSubstr("2 of 2 workers answered"));
  const std::string manifest = ReadAll(root + "/by-steps/manifest.json");
  EXPECT_THAT(manifest, HasSubstr("\"mode\": \"worker_writes\""));
  EXPECT_THAT(manifest, HasSubstr("\"clock_source\": \"job\""));
  // The coordinator asked the ranks: one call from the client.
  EXPECT_THAT(manifest, HasSubstr("\"relayed_by\": \"" + coordinator));
  ExpectStepWindows(root + "/by-steps", 2, kSkew, {60, 61, 62});
  const int status = launcher.Wait(60000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << launcher.output();
}

TEST(CaptureJob, NoCoordinatorIsAClearError) {
  const std::string capdir = FreshDir("no-job");
  // A port where nothing listens.
  Process capture({kPodscope, "capture", "--job", "127.0.0.1:1", "--logdir",
                   capdir, "--duration_ms", "100"});
  const int status = capture.Wait(60000);
  ASSERT_TRUE(WIFEXITED(status)) << capture.output();
  EXPECT_EQ(WEXITSTATUS(status), 6) << capture.output();
  EXPECT_THAT(capture.output(), HasSubstr("--job 127.0.0.1:1"));
  EXPECT_THAT(capture.output(), HasSubstr("unreachable"));
  Process both({kPodscope, "capture", "--job", "127.0.0.1:1", "--service_addr",
                "127.0.0.1:2", "--logdir", capdir});
  EXPECT_EQ(WEXITSTATUS(both.Wait(30000)), 2) << both.output();
}

// `n` network namespaces on one bridge: host i at 10.S.0.(i+2), this
// namespace at 10.S.0.1; removed on destruction.
class BridgedHosts {
 public:
  explicit BridgedHosts(int n) {
    const std::string tag = std::to_string(getpid() % 100000);
    subnet_ = 40 + getpid() % 100;
    bridge_ = "pdbr" + tag;
    std::string cmd = "set -e; ip link add " + bridge_ +
                      " type bridge; ip addr add " + Net() + ".1/24 dev " +
                      bridge_ + "; ip link set " + bridge_ + " up";
    if (std::system(cmd.c_str()) != 0) {
      ok_ = false;
      return;
    }
    for (int i = 0; i < n; ++i) {
      const std::string ns = "podscope-dc" + tag + "-" + std::to_string(i);
      const std::string h = "pdh" + tag + "x" + std::to_string(i);
      const std::string in = "pdn" + tag + "x" + std::to_string(i);
      names_.push_back(ns);
      links_.push_back(h);
      const std::string x = "; ip netns exec " + ns + " ";
      cmd = "set -e; ip netns add " + ns + "; ip link add " + h +
            " type veth peer name " + in + "; ip link set " + in + " netns " +
            ns + "; ip link set " + h + " master " + bridge_ +
            "; ip link set " + h + " up" + x + "ip addr add " + address(i) +
            "/24 dev " + in + x + "ip link set " + in + " up" + x +
            "ip link set lo up";
      if (std::system(cmd.c_str()) != 0) {
        ok_ = false;
        return;
      }
    }
  }
  ~BridgedHosts() {
    for (size_t i = 0; i < names_.size(); ++i) {
      std::system(("ip link del " + links_[i] + " >/dev/null 2>&1").c_str());
      std::system(("ip netns del " + names_[i] + " >/dev/null 2>&1").c_str());
    }
    std::system(("ip link del " + bridge_ + " >/dev/null 2>&1").c_str());
  }
  bool ok() const { return ok_; }
  const std::string& name(int i) const { return names_[i]; }
  std::string address(int i) const {
    return Net() + "." + std::to_string(i + 2);
  }

 private:
  std::string Net() const { return "10." + std::to_string(subnet_) + ".0"; }
  bool ok_ = true;
  int subnet_ = 0;
  std::string bridge_;
  std::vector<std::string> names_, links_;
};

TEST(JobClock, ThreeHostsOneJobCapturedByName) {
  PODSCOPE_SKIP_WITHOUT_NETWORK_NAMESPACES();
  BridgedHosts hosts(3);
  ASSERT_TRUE(hosts.ok()) << "could not set up network namespaces";
  const std::string logdir = FreshDir("multihost");
  const std::string capdir = FreshDir("multihost-capture");
  const std::string rdzv =
      hosts.address(0) + ":" + std::to_string(20000 + getpid() % 10000);
  // Heartbeats (and so recorded offsets) every 200 ms, as often as the
  // marks: the fit bounds a time by offsets on both sides of it, with the
  // drift their pairs allow.
  const std::vector<std::string> env = {
      "PODSCOPE_JOB_TOKEN=multihost-job-token",
      "PODSCOPE_HEARTBEAT_INTERVAL_MS=200"};
  constexpr int64_t kSkew = 2'000'000'000;
  std::vector<std::unique_ptr<Process>> launchers;
  for (int i = 0; i < 3; ++i) {
    launchers.push_back(std::make_unique<Process>(
        std::vector<std::string>{
            "ip", "netns", "exec", hosts.name(i), kPodscope, "launch",
            // A test network: no certificate.
            "--insecure", "--nnodes", "3", "--node_rank", std::to_string(i),
            "--nproc_per_node", "1", "--rdzv_endpoint", rdzv, kWorker, "job",
            "--logdir", logdir, "--marks", "3", "--skew_ns",
            std::to_string(kSkew), "--trace_marks_only", "1", "--run_ms",
            "6000"},
        env));
  }
  // Every rank is running (and has stopped its own trace) once it says so.
  std::string coordinator;
  const std::regex ready(R"(ready rank (\d+) pid \d+ coordinator (\S+))");
  for (int i = 0; i < 3; ++i) {
    std::string line;
    bool traced = false;
    while (!traced && launchers[i]->ReadLine(&line, 60000)) {
      std::smatch m;
      if (std::regex_search(line, m, ready)) {
        EXPECT_EQ(std::stoi(m[1]), i) << "ranks follow the node order";
        coordinator = m[2];
      }
      traced = line.find("] traced rank") != std::string::npos;
    }
    ASSERT_TRUE(traced) << launchers[i]->output();
  }
  EXPECT_EQ(coordinator.rfind(hosts.address(0) + ":", 0), 0u) << coordinator;

  // Capture the whole job by its coordinator's address.
  Process capture({kPodscope, "capture", "--job", coordinator, "--logdir",
                   capdir, "--duration_ms", "1500", "--session", "byjob"},
                  env);
  const int cap_status = capture.Wait(60000);
  ASSERT_TRUE(WIFEXITED(cap_status)) << capture.output();
  EXPECT_EQ(WEXITSTATUS(cap_status), 0) << capture.output();
  EXPECT_THAT(capture.output(), HasSubstr("3 of 3 workers answered"));
  const std::string manifest = ReadAll(capdir + "/byjob/manifest.json");
  EXPECT_THAT(manifest, HasSubstr("\"job\": \"" + coordinator + "\""));
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(std::regex_search(
        manifest, std::regex("\\{\"rank\": " + std::to_string(r) +
                             ", \"address\": ?\"" + hosts.address(r) + ":")))
        << manifest;
  }
  auto captured = testing::ReadRankTraces(capdir + "/byjob");
  ASSERT_EQ(captured.size(), 3u) << manifest;
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(captured[r].world, 3);
    EXPECT_TRUE(captured[r].complete) << captured[r].path;
  }

  std::string all;
  for (auto& l : launchers) {
    const int status = l->Wait(60000);
    all += l->output();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << l->output();
  }
  ExpectAligned(testing::ReadRankTraces(logdir + "/run"),
                testing::ParseMarks(all), 3, 3, kSkew);
}

// `--steps` across three hosts (network namespaces), each rank on a clock
// skewed by seconds: every rank writes its own file holding exactly the
// steps asked for, lined up by the job's clock.
TEST(CaptureJob, StepsAcrossThreeHostsWrittenByTheRanks) {
  PODSCOPE_SKIP_WITHOUT_NETWORK_NAMESPACES();
  BridgedHosts hosts(3);
  ASSERT_TRUE(hosts.ok()) << "could not set up network namespaces";
  const std::string root = FreshDir("steps-3hosts");
  const std::string rdzv =
      hosts.address(0) + ":" + std::to_string(20000 + (getpid() + 7) % 10000);
  const std::vector<std::string> env = {"PODSCOPE_JOB_TOKEN=steps-job-token",
                                        "PODSCOPE_CAPTURE_ROOT=" + root};
  constexpr int64_t kSkew = 1'500'000'000;
  std::vector<std::unique_ptr<Process>> launchers;
  for (int i = 0; i < 3; ++i) {
    launchers.push_back(std::make_unique<Process>(
        std::vector<std::string>{"ip",
                                 "netns",
                                 "exec",
                                 hosts.name(i),
                                 kPodscope,
                                 "launch",
                                 "--insecure",
                                 "--nnodes",
                                 "3",
                                 "--node_rank",
                                 std::to_string(i),
                                 "--nproc_per_node",
                                 "1",
                                 "--rdzv_endpoint",
                                 rdzv,
                                 kWorker,
                                 "job",
                                 "--run_ms",
                                 "6000",
                                 "--step_ms",
                                 "40",
                                 "--skew_ns",
                                 std::to_string(kSkew)},
        env));
  }
  std::string coordinator;
  for (int i = 0; i < 3; ++i) {
    const std::string c = WaitForRanks(*launchers[i], 1);
    ASSERT_FALSE(c.empty()) << launchers[i]->output();
    coordinator = c;
  }
  EXPECT_EQ(coordinator.rfind(hosts.address(0) + ":", 0), 0u) << coordinator;
  // Step 100 begins about 4 s after the ranks started.
  Process capture({kPodscope, "capture", "--job", coordinator, "--logdir", root,
                   "--steps", "100:102", "--session", "by-steps"},
                  env);
  const int cap_status = capture.Wait(60000);
  EXPECT_TRUE(WIFEXITED(cap_status) && WEXITSTATUS(cap_status) == 0)
      << capture.output();
  EXPECT_THAT(capture.output(), HasSubstr("3 of 3 workers answered"));
  const std::string manifest = ReadAll(root + "/by-steps/manifest.json");
  EXPECT_THAT(manifest, HasSubstr("\"mode\": \"worker_writes\""));
  EXPECT_THAT(manifest, HasSubstr("\"clock_source\": \"job\""));
  // Relayed by the job's coordinator, on node 0's host.
  EXPECT_THAT(manifest,
              HasSubstr("\"relayed_by\": \"" + hosts.address(0) + ":"));
  ExpectStepWindows(root + "/by-steps", 3, kSkew, {100, 101, 102});
  for (auto& l : launchers) {
    const int status = l->Wait(60000);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << l->output();
  }
}

}  // namespace
}  // namespace podscope::runtime
