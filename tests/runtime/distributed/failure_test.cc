// A worker killed (SIGKILL) or hung (SIGSTOP) in the middle of a job: every
// survivor stops within the detection time naming it, the launcher says
// which rank it was, and every trace written so far reads back; a
// collective blocked on that worker ends with the job's error instead of
// waiting out Gloo's timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <thread>

#include "job_traces.h"
#include "process.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using testing::Process;
using Clock = std::chrono::steady_clock;

const std::string kPodscope = PODSCOPE_BIN;
const std::string kWorker = DIST_WORKER;

std::string FreshDir(const std::string& name) {
  return testing::FreshDir("podscope-dist-test", name);
}

int Check(const std::string& path) {
  const int status = std::system(
      (kPodscope + " check '" + path + "' >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Outcome {
  int status = -1;
  std::string output;
  std::map<int, double> detected_s;  // survivor rank -> seconds after the fault
  pid_t victim_pid = 0;
};

// Runs 3 ranks tracing into `logdir`, applies `signo` to rank `victim` once
// every rank is running, and waits for the launcher.
Outcome RunWithFault(const std::string& logdir, int victim, int signo) {
  Outcome o;
  Process launcher({kPodscope, "launch", "--nproc_per_node", "3", "--grace_ms",
                    "2000", kWorker, "job", "--logdir", logdir, "--run_ms",
                    "60000"});
  std::map<int, pid_t> pids;
  std::string line;
  const std::regex ready(R"(\[rank (\d+)\] ready rank \d+ pid (\d+))");
  while (pids.size() < 3 && launcher.ReadLine(&line, 60000)) {
    std::smatch m;
    if (std::regex_search(line, m, ready)) {
      pids[std::stoi(m[1])] = static_cast<pid_t>(std::stol(m[2]));
    }
  }
  if (pids.size() < 3) {
    o.output = launcher.output();
    return o;
  }
  // Let a few heartbeats and trace flushes happen.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  o.victim_pid = pids[victim];
  kill(o.victim_pid, signo);
  const auto fault = Clock::now();
  const std::regex failed(
      R"(\[rank (\d+)\] podscope: rank \d+ .*the job failed)");
  while (launcher.ReadLine(&line, 30000)) {
    std::smatch m;
    if (std::regex_search(line, m, failed)) {
      o.detected_s[std::stoi(m[1])] =
          std::chrono::duration<double>(Clock::now() - fault).count();
    }
  }
  o.status = launcher.Wait(30000);
  o.output = launcher.output();
  return o;
}

TEST(DeadWorker, KilledRankIsReportedToEverySurvivor) {
  const std::string logdir = FreshDir("killed");
  Outcome o = RunWithFault(logdir, 2, SIGKILL);
  ASSERT_TRUE(WIFEXITED(o.status)) << o.output;
  // The launcher exits with the first failure's status: rank 2's SIGKILL.
  EXPECT_EQ(WEXITSTATUS(o.status), 128 + SIGKILL) << o.output;
  EXPECT_THAT(o.output, HasSubstr("job failed: rank 2 (pid " +
                                  std::to_string(o.victim_pid) +
                                  ") failed: killed by signal SIGKILL"));
  for (int r : {0, 1}) {
    ASSERT_TRUE(o.detected_s.count(r)) << "rank " << r << "\n" << o.output;
    EXPECT_LE(o.detected_s[r], 10.0) << "rank " << r;
    std::printf("rank %d learned of the dead rank after %.2f s\n", r,
                o.detected_s[r]);
  }
  EXPECT_THAT(o.output, HasSubstr("the job failed: rank 2 (host "));
  EXPECT_THAT(o.output, HasSubstr("is dead or hung"));
  // Every trace reads: the survivors' complete, the victim's up to its
  // last flush.
  auto traces = testing::ReadRankTraces(logdir + "/run");
  ASSERT_EQ(traces.size(), 3u) << logdir;
  for (int r : {0, 1}) {
    EXPECT_TRUE(traces[r].complete) << traces[r].path;
    EXPECT_EQ(Check(traces[r].path), 0) << traces[r].path;
  }
  EXPECT_FALSE(traces[2].complete);
  EXPECT_THAT(Check(traces[2].path), ::testing::AnyOf(0, 1)) << traces[2].path;
}

TEST(DeadWorker, StoppedRankIsReportedAsHung) {
  const std::string logdir = FreshDir("stopped");
  Outcome o = RunWithFault(logdir, 1, SIGSTOP);
  ASSERT_TRUE(WIFEXITED(o.status)) << o.output;
  EXPECT_NE(WEXITSTATUS(o.status), 0) << o.output;
  EXPECT_THAT(o.output,
              HasSubstr("rank 1 (pid " + std::to_string(o.victim_pid) +
                        ") was stopped by SIGSTOP"));
  EXPECT_THAT(o.output, HasSubstr("job failed: rank 1 (pid " +
                                  std::to_string(o.victim_pid) +
                                  ") hung: stopped by SIGSTOP"));
  for (int r : {0, 2}) {
    ASSERT_TRUE(o.detected_s.count(r)) << "rank " << r << "\n" << o.output;
    EXPECT_LE(o.detected_s[r], 10.0) << "rank " << r;
  }
  EXPECT_THAT(o.output, HasSubstr("the job failed: rank 1 (host "));
  auto traces = testing::ReadRankTraces(logdir + "/run");
  ASSERT_EQ(traces.size(), 3u) << logdir;
  for (int r : {0, 2}) {
    EXPECT_TRUE(traces[r].complete) << traces[r].path;
    EXPECT_EQ(Check(traces[r].path), 0) << traces[r].path;
  }
  EXPECT_THAT(Check(traces[1].path), ::testing::AnyOf(0, 1)) << traces[1].path;
}

TEST(DeadWorker, KilledCoordinatorIsReportedToEverySurvivor) {
  // Rank 0 hosts the coordinator: the others' heartbeats go unanswered.
  const std::string logdir = FreshDir("coordinator");
  Outcome o = RunWithFault(logdir, 0, SIGKILL);
  ASSERT_TRUE(WIFEXITED(o.status)) << o.output;
  EXPECT_EQ(WEXITSTATUS(o.status), 128 + SIGKILL) << o.output;
  EXPECT_THAT(o.output, HasSubstr("job failed: rank 0 (pid " +
                                  std::to_string(o.victim_pid) +
                                  ") failed: killed by signal SIGKILL"));
  for (int r : {1, 2}) {
    ASSERT_TRUE(o.detected_s.count(r)) << "rank " << r << "\n" << o.output;
    EXPECT_LE(o.detected_s[r], 10.0) << "rank " << r;
  }
  EXPECT_THAT(o.output, HasSubstr("the job failed: rank 0 (host "));
  EXPECT_THAT(o.output, HasSubstr("the job's coordinator) is dead or hung"));
  auto traces = testing::ReadRankTraces(logdir + "/run");
  ASSERT_EQ(traces.size(), 3u) << logdir;
  for (int r : {1, 2}) {
    EXPECT_TRUE(traces[r].complete) << traces[r].path;
    EXPECT_EQ(Check(traces[r].path), 0) << traces[r].path;
  }
}

// Two ranks under the launcher with exit_on_peer_failure false: rank 0 is
// blocked in an all-reduce rank 1 never joins when `signo` hits rank 1.
struct CollectiveOutcome {
  std::string error;    // what rank 0's all-reduce returned
  double ended_s = -1;  // seconds from the fault to that line
  pid_t victim_pid = 0;
  int launcher_status = -1;
  std::string output;
};

CollectiveOutcome RunCollectiveWithFault(const std::string& logdir, int signo) {
  CollectiveOutcome o;
  Process launcher({kPodscope, "launch", "--nproc_per_node", "2", "--grace_ms",
                    "2000", kWorker, "collective", "--logdir", logdir});
  const std::regex ready(R"(\[rank 1\] ready rank 1 pid (\d+))");
  bool entered = false;
  std::string line;
  while ((o.victim_pid == 0 || !entered) && launcher.ReadLine(&line, 60000)) {
    std::smatch m;
    if (std::regex_search(line, m, ready)) {
      o.victim_pid = static_cast<pid_t>(std::stol(m[1]));
    }
    entered |= line.find("[rank 0] entering all-reduce") != std::string::npos;
  }
  if (o.victim_pid == 0 || !entered) {
    o.output = launcher.output();
    return o;
  }
  // Rank 0 is inside Gloo, waiting for rank 1.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(o.victim_pid, signo);
  const auto fault = Clock::now();
  while (launcher.ReadLine(&line, 30000)) {
    const size_t at = line.find("[rank 0] all-reduce failed after ");
    if (at != std::string::npos) {
      o.ended_s = std::chrono::duration<double>(Clock::now() - fault).count();
      o.error = line.substr(line.find(": ", at) + 2);
      break;
    }
  }
  o.launcher_status = launcher.Wait(30000);
  o.output = launcher.output();
  return o;
}

void ExpectCollectiveEndedByTheJob(const std::string& logdir,
                                   const CollectiveOutcome& o) {
  ASSERT_GE(o.ended_s, 0) << o.output;
  // The job's detection time (dead_after 6 s + a heartbeat), not Gloo's
  // 60 s timeout.
  EXPECT_LE(o.ended_s, 10.0) << o.output;
  std::printf("rank 0's all-reduce ended %.2f s after the fault: %s\n",
              o.ended_s, o.error.c_str());
  EXPECT_THAT(o.error, HasSubstr("AllReduce watched#1 (rank 0 of 2): the job "
                                 "failed: rank 1 (host "));
  EXPECT_THAT(o.error, HasSubstr("pid " + std::to_string(o.victim_pid) +
                                 ") is dead or hung"));
  EXPECT_THAT(o.error, HasSubstr("ABORTED"));
  EXPECT_THAT(o.output, HasSubstr("[rank 0] trace closed "));
  ASSERT_TRUE(WIFEXITED(o.launcher_status)) << o.output;
  EXPECT_NE(WEXITSTATUS(o.launcher_status), 0) << o.output;

  auto traces = testing::ReadRankTraces(logdir + "/run");
  ASSERT_TRUE(traces.count(0)) << logdir;
  EXPECT_TRUE(traces[0].complete) << traces[0].path;
  EXPECT_EQ(Check(traces[0].path), 0) << traces[0].path;
  // The failed all-reduce is in rank 0's trace, marked failed.
  auto file = profiler::testing::ReadTraceFile(traces[0].path);
  ASSERT_NE(file.reader, nullptr);
  int failed = 0;
  for (const auto& track : file.tracks) {
    for (uint32_t i = 0; i < track.events.slices.size(); ++i) {
      if (file.Name(track.events.slices[i].name) == "AllReduce") {
        EXPECT_EQ(file.IntArg(track, i, "ok"), 0);
        ++failed;
      }
    }
  }
  EXPECT_EQ(failed, 1);
}

TEST(DeadWorker, CollectiveBlockedOnAKilledPeerEndsNamingIt) {
  const std::string logdir = FreshDir("collective-killed");
  CollectiveOutcome o = RunCollectiveWithFault(logdir, SIGKILL);
  ExpectCollectiveEndedByTheJob(logdir, o);
}

TEST(DeadWorker, CollectiveBlockedOnAStoppedPeerEndsNamingIt) {
  const std::string logdir = FreshDir("collective-stopped");
  CollectiveOutcome o = RunCollectiveWithFault(logdir, SIGSTOP);
  ExpectCollectiveEndedByTheJob(logdir, o);
  EXPECT_THAT(o.output,
              HasSubstr("rank 1 (pid " + std::to_string(o.victim_pid) +
                        ") was stopped by SIGSTOP"));
}

}  // namespace
}  // namespace podscope::runtime
