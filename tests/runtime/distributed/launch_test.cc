// `podscope launch` and Launch() with real worker processes: the
// environment the workers get, rank-prefixed output, SIGTERM and SIGINT
// forwarding, the first failing rank (of the launcher and of Launch), and a
// client spanning every process.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>

#include "process.h"

namespace podscope::runtime {
namespace {

using ::testing::HasSubstr;
using testing::Process;

const std::string kPodscope = PODSCOPE_BIN;
const std::string kWorker = DIST_WORKER;

TEST(Launch, WorkersGetTheJobEnvironmentAndPrefixedOutput) {
  Process launcher(
      {kPodscope, "launch", "--nproc_per_node", "3", kWorker, "env"});
  const int status = launcher.Wait(60000);
  const std::string& out = launcher.output();
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  for (int r = 0; r < 3; ++r) {
    const std::string p = "[rank " + std::to_string(r) + "] ";
    const std::string rs = std::to_string(r);
    EXPECT_THAT(
        out, HasSubstr(p + "env RANK=" + rs + " WORLD_SIZE=3 LOCAL_RANK=" + rs +
                       " LOCAL_WORLD_SIZE=3 GROUP_RANK=0 "
                       "MASTER_ADDR=127.0.0.1 MASTER_PORT="));
    EXPECT_THAT(out, HasSubstr(p + "found rank " + rs + " of 3 local " + rs +
                               "/3 node 0 at 127.0.0.1:"));
    EXPECT_THAT(out, HasSubstr("via podscope"));
    EXPECT_THAT(out, HasSubstr(p + "a line on stderr\n"));
    // A last line without a newline is still a line of its own.
    EXPECT_THAT(out, HasSubstr(p + "no newline at the end\n"));
  }
}

TEST(Launch, FirstFailingRankStopsTheOthersAndIsNamed) {
  const auto t0 = std::chrono::steady_clock::now();
  Process launcher({kPodscope, "launch", "--nproc_per_node", "3",
                    "--failure_wait_ms", "300", "--grace_ms", "2000", kWorker,
                    "env", "--fail_rank", "1", "--fail_code", "3"});
  const int status = launcher.Wait(60000);
  const std::string& out = launcher.output();
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 3) << out;
  EXPECT_THAT(out, HasSubstr("rank 1 (pid "));
  EXPECT_THAT(out,
              HasSubstr("failed: exit code 3; stopping the other 2 worker(s)"));
  EXPECT_THAT(out, HasSubstr("podscope launch: job failed: rank 1"));
  // The others sleep for a minute unless stopped.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

// The launcher, sent `signal` once both workers run, forwards it to them
// and exits 128 + signal.
void ExpectSignalForwarded(int signal, const std::string& name) {
  Process launcher(
      {kPodscope, "launch", "--nproc_per_node", "2", kWorker, "sigterm"});
  int ready = 0;
  std::string line;
  while (ready < 2 && launcher.ReadLine(&line, 30000)) {
    if (line.find("] ready") != std::string::npos) ++ready;
  }
  ASSERT_EQ(ready, 2) << launcher.output();
  kill(launcher.pid(), signal);
  const int status = launcher.Wait(30000);
  const std::string& out = launcher.output();
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 128 + signal) << out;
  EXPECT_THAT(out,
              HasSubstr("received " + name + "; forwarding it to the workers"));
  EXPECT_THAT(out, HasSubstr("[rank 0] got " + name));
  EXPECT_THAT(out, HasSubstr("[rank 1] got " + name));
}

TEST(Launch, SigtermIsForwardedToEveryWorker) {
  ExpectSignalForwarded(SIGTERM, "SIGTERM");
}

TEST(Launch, SigintIsForwardedToEveryWorker) {
  ExpectSignalForwarded(SIGINT, "SIGINT");
}

TEST(Launch, BadUsageIsAClearError) {
  {
    Process p({kPodscope, "launch", "--nnodes", "2", kWorker, "env"});
    const int status = p.Wait(30000);
    EXPECT_EQ(WEXITSTATUS(status), 2) << p.output();
    EXPECT_THAT(p.output(), HasSubstr("--rdzv_endpoint"));
  }
  {
    Process p({kPodscope, "launch", "--max_restarts", "1", kWorker, "env"});
    EXPECT_EQ(WEXITSTATUS(p.Wait(30000)), 2) << p.output();
    EXPECT_THAT(p.output(), HasSubstr("--max_restarts"));
  }
  {
    Process p({kPodscope, "launch", "--nproc_per_node", "2"});
    EXPECT_EQ(WEXITSTATUS(p.Wait(30000)), 2) << p.output();
    EXPECT_THAT(p.output(), HasSubstr("no PROGRAM"));
  }
  {
    Process p({kPodscope, "launch", "/no/such/program"});
    const int status = p.Wait(30000);
    EXPECT_EQ(WEXITSTATUS(status), 127) << p.output();
    EXPECT_THAT(p.output(), HasSubstr("[rank 0] cannot run /no/such/program"));
    EXPECT_THAT(p.output(), HasSubstr("rank 0 (pid "));
  }
}

TEST(Launch, LaunchRunsTheFunctionInEveryProcessWithGlobalDevices) {
  Process p({kWorker, "spawn"}, {"CPU_NUM_DEVICES=2"});
  const int status = p.Wait(90000);
  const std::string& out = p.output();
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  for (int r = 0; r < 3; ++r) {
    const std::string rs = std::to_string(r);
    EXPECT_THAT(
        out, HasSubstr("[rank " + rs + "] spawned rank " + rs +
                       " of 3: 6 devices, 2 addressable, process " + rs +
                       " of 3, first addressable id " + std::to_string(2 * r)));
  }
  EXPECT_THAT(out, HasSubstr("spawn ok"));
}

// Launch(fn, 3) when one rank's fn fails: Launch returns the failure naming
// that rank and how it ended, after stopping the others (they would wait a
// minute).
void ExpectLaunchNamesTheFailingRank(const std::string& how,
                                     const std::string& ended) {
  const auto t0 = std::chrono::steady_clock::now();
  Process p({kWorker, "spawn_failure", "--fail_rank", "1", "--fail_how", how});
  const int status = p.Wait(60000);
  const std::string& out = p.output();
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 3) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(out, HasSubstr("[rank " + std::to_string(r) +
                               "] started rank " + std::to_string(r)));
  }
  EXPECT_THAT(out, HasSubstr(") failed: " + ended +
                             "; stopping the other 2 worker(s)"));
  EXPECT_THAT(out, HasSubstr("launch failed: ABORTED: Launch: rank 1 (pid "));
  EXPECT_THAT(out, HasSubstr(") failed: " + ended + "\n"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("was not stopped")));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("spawn ok")));
}

TEST(Launch, LaunchReturnsTheRankWhoseFunctionFailed) {
  ExpectLaunchNamesTheFailingRank("error", "exit code 1");
  // Launch prints the function's error in the worker.
  Process p({kWorker, "spawn_failure", "--fail_rank", "2"});
  p.Wait(60000);
  EXPECT_THAT(p.output(), HasSubstr("[rank 2] INTERNAL: rank 2 gave up"));
  EXPECT_THAT(p.output(), HasSubstr("Launch: rank 2 (pid "));
}

TEST(Launch, LaunchReturnsTheRankThatExitedNonZero) {
  ExpectLaunchNamesTheFailingRank("exit", "exit code 7");
}

}  // namespace
}  // namespace podscope::runtime
