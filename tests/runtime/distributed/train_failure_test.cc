// examples/train_mnist as a two-rank job under `podscope launch` (synthetic
// data, small batches) with one rank killed (SIGKILL) or hung (SIGSTOP)
// while steps run: the launcher ends the job within seconds naming the
// rank and how it died, the survivor reports the dead rank, and every trace
// written so far reads back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process.h"

namespace podscope::runtime {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using testing::Process;
using Clock = std::chrono::steady_clock;

const std::string kPodscope = PODSCOPE_BIN;
const std::string kTrainMnist = TRAIN_MNIST;

std::string FreshDir(const std::string& name) {
  return testing::FreshDir("podscope-train-failure", name);
}

int Check(const std::string& path) {
  const int status = std::system(
      (kPodscope + " check '" + path + "' >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The child of `parent` whose environment has RANK=`rank`, or 0.
pid_t WorkerOf(pid_t parent, int rank) {
  const std::string want = "RANK=" + std::to_string(rank);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(line.substr(paren + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream environ(entry.path() / "environ", std::ios::binary);
    std::string var;
    while (std::getline(environ, var, '\0')) {
      if (var == want) return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

struct Outcome {
  int status = -1;
  double ended_s = -1;  // from the fault to the launcher's exit
  pid_t victim = 0;
  std::string output;
};

Outcome TrainAndHurtRank1(const std::string& logdir, const std::string& session,
                          int signo) {
  Outcome o;
  Process launcher(
      {kPodscope,         "launch", "--nproc_per_node", "2",
       "--grace_ms",      "2000",   kTrainMnist,        "--fake_data",
       "--steps",         "100000", "--batch_size",     "8",
       "--log_every",     "1",      "--test_batches",   "0",
       "--profiler_port", "-1",     "--logdir",         logdir},
      {"PODSCOPE_SESSION=" + session});
  // Training is under way once both ranks have logged a few steps.
  int steps[2] = {0, 0};
  std::string line;
  while ((steps[0] < 3 || steps[1] < 3) && launcher.ReadLine(&line, 120000)) {
    for (int r = 0; r < 2; ++r) {
      if (line.rfind("[rank " + std::to_string(r) + "] step ", 0) == 0) {
        ++steps[r];
      }
    }
  }
  o.victim = WorkerOf(launcher.pid(), 1);
  if (steps[0] < 3 || steps[1] < 3 || o.victim == 0) {
    o.output = launcher.output();
    return o;
  }
  kill(o.victim, signo);
  const auto fault = Clock::now();
  o.status = launcher.Wait(60000);
  o.ended_s = std::chrono::duration<double>(Clock::now() - fault).count();
  o.output = launcher.output();
  return o;
}

void ExpectTracesRead(const std::string& session_dir) {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(session_dir)) {
    if (e.path().extension() != ".podtrace") continue;
    ++files;
    // 0: intact; 1: recovered up to the last whole record (the victim's).
    EXPECT_THAT(Check(e.path()), AnyOf(0, 1)) << e.path();
  }
  EXPECT_EQ(files, 2) << session_dir;
}

TEST(TrainFailure, KilledRankEndsTheJobNamingIt) {
  const std::string logdir = FreshDir("killed");
  Outcome o = TrainAndHurtRank1(logdir, "killed", SIGKILL);
  ASSERT_GT(o.ended_s, 0) << o.output;
  std::printf("the launcher exited %.2f s after the SIGKILL\n", o.ended_s);
  EXPECT_LE(o.ended_s, 15.0) << o.output;
  ASSERT_TRUE(WIFEXITED(o.status)) << o.output;
  EXPECT_EQ(WEXITSTATUS(o.status), 128 + SIGKILL) << o.output;
  const std::string victim = "rank 1 (pid " + std::to_string(o.victim) + ")";
  EXPECT_THAT(o.output,
              HasSubstr(victim + " failed: killed by signal SIGKILL"));
  EXPECT_THAT(o.output, HasSubstr("podscope launch: job failed: " + victim));
  // The survivor names the dead rank and closes its trace.
  EXPECT_THAT(o.output, HasSubstr("[rank 0] podscope: rank 0 (host "));
  EXPECT_THAT(o.output, HasSubstr("the job failed: rank 1 (host "));
  EXPECT_THAT(o.output, HasSubstr("pid " + std::to_string(o.victim) +
                                  ") is dead or hung"));
  ExpectTracesRead(logdir + "/killed");
}

TEST(TrainFailure, StoppedRankEndsTheJobAsHung) {
  const std::string logdir = FreshDir("stopped");
  Outcome o = TrainAndHurtRank1(logdir, "stopped", SIGSTOP);
  ASSERT_GT(o.ended_s, 0) << o.output;
  std::printf("the launcher exited %.2f s after the SIGSTOP\n", o.ended_s);
  EXPECT_LE(o.ended_s, 15.0) << o.output;
  ASSERT_TRUE(WIFEXITED(o.status)) << o.output;
  EXPECT_NE(WEXITSTATUS(o.status), 0) << o.output;
  const std::string victim = "rank 1 (pid " + std::to_string(o.victim) + ")";
  EXPECT_THAT(o.output, HasSubstr(victim + " was stopped by SIGSTOP"));
  EXPECT_THAT(o.output, HasSubstr("podscope launch: job failed: " + victim +
                                  " hung: stopped by SIGSTOP"));
  EXPECT_THAT(o.output, HasSubstr("[rank 0] podscope: rank 0 (host "));
  EXPECT_THAT(o.output, HasSubstr("pid " + std::to_string(o.victim) +
                                  ") is dead or hung"));
  ExpectTracesRead(logdir + "/stopped");
}

}  // namespace
}  // namespace podscope::runtime
