// bench/run distributed: how fast a job learns that a rank died or hung.
//
//   coordinator.dead_rank_detect_s  SIGKILL one of 3 ranks; the time until
//                                   every survivor has exited naming it
//                                   (Job's default: heartbeat every 1 s,
//                                   dead after 6 s; the promise is <= 10 s)
//   coordinator.hung_rank_detect_s  the same for a SIGSTOPped rank
//   coordinator.detect_vs_timeout   dead_rank_detect_s over the configured
//                                   heartbeat timeout measured alongside
//
// The ranks are this program run again with `--worker`: real processes,
// real gRPC on loopback.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/free_port.h"
#include "common/headline.h"
#include "podscope/runtime/distributed.h"

namespace {

namespace rt = podscope::runtime;
using Clock = std::chrono::steady_clock;
using podscope::bench::FreePort;

std::string g_self;

int RunWorker() {
  rt::InitOptions o;
  o.start_profiler_server = false;
  auto job = rt::Job::Init(o);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 2;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  // Runs until the job fails (Job exits the process) or 120 s pass.
  std::this_thread::sleep_for(std::chrono::seconds(120));
  return 0;
}

struct Rank {
  pid_t pid = -1;
  int out = -1;
};

// Seconds from the fault on rank 2 until ranks 0 and 1 have both exited
// with the peer-failure status; < 0 when they did not.
double MeasureDetection(int signo) {
  const int port = FreePort();
  std::vector<Rank> ranks(3);
  for (int r = 0; r < 3; ++r) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("RANK=" + std::to_string(r));
    env_strings.push_back("WORLD_SIZE=3");
    env_strings.push_back("MASTER_ADDR=127.0.0.1");
    env_strings.push_back("MASTER_PORT=" + std::to_string(port));
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string worker = "--worker";
    char* argv[] = {g_self.data(), worker.data(), nullptr};
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(p[1], 1);
      execve(argv[0], argv, envp.data());
      _exit(127);
    }
    close(p[1]);
    ranks[r] = {pid, p[0]};
  }
  for (Rank& r : ranks) {
    pollfd pf{r.out, POLLIN, 0};
    char buf[64];
    if (poll(&pf, 1, 60000) <= 0 || read(r.out, buf, sizeof(buf)) <= 0) {
      for (Rank& k : ranks) kill(k.pid, SIGKILL);
      return -1;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(ranks[2].pid, signo);
  const auto fault = Clock::now();
  double worst = 0;
  bool ok = true;
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    waitpid(ranks[r].pid, &status, 0);
    worst = std::max(
        worst, std::chrono::duration<double>(Clock::now() - fault).count());
    ok &= WIFEXITED(status) &&
          WEXITSTATUS(status) == podscope::job::kPeerFailureExitCode;
  }
  kill(ranks[2].pid, SIGKILL);
  waitpid(ranks[2].pid, nullptr, 0);
  for (Rank& r : ranks) close(r.out);
  return ok ? worst : -1;
}

void BM_DeadRankDetection(benchmark::State& state) {
  double killed = 0, hung = 0;
  for (auto _ : state) {
    killed = MeasureDetection(SIGKILL);
    hung = MeasureDetection(SIGSTOP);
  }
  if (killed < 0 || hung < 0) {
    state.SkipWithError("survivors did not report the dead rank");
    return;
  }
  const double timeout = absl::ToDoubleSeconds(rt::InitOptions().dead_after);
  state.counters["coordinator.dead_rank_detect_s"] = killed;
  state.counters["coordinator.hung_rank_detect_s"] = hung;
  state.counters["coordinator.detect_vs_timeout"] = killed / timeout;
}
BENCHMARK(BM_DeadRankDetection)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  g_self = n > 0 ? std::string(exe, n) : argv[0];
  if (argc > 1 && std::strcmp(argv[1], "--worker") == 0) return RunWorker();
  podscope::bench::RegisterHeadline("coordinator.dead_rank_detect_s", "s");
  podscope::bench::RegisterHeadline("coordinator.hung_rank_detect_s", "s");
  podscope::bench::RegisterHeadline("coordinator.detect_vs_timeout", "ratio");
  return podscope::bench::RunBenchmarksWithHeadlines(argc, argv);
}
