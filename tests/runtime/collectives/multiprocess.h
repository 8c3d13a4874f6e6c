// Runs a test's workers as real processes: the test binary re-executes
// itself (/proc/self/exe) with "--worker SCENARIO", one process per rank,
// with RANK / WORLD_SIZE / PODSCOPE_TEST_STORE in the environment.
#ifndef PODSCOPE_TESTS_RUNTIME_COLLECTIVES_MULTIPROCESS_H_
#define PODSCOPE_TESTS_RUNTIME_COLLECTIVES_MULTIPROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace podscope::runtime::testing {

struct WorkerResult {
  int exit_code = -1;  // -1: killed or timed out
  std::string output;  // stdout and stderr
};

// A fresh folder for one run's store and outputs.
inline std::string FreshRunDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("podscope-collectives-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Starts `world` workers of `scenario` and waits for them (at most
// `timeout`, then kills the rest). `extra_env` entries are "K=V".
inline std::vector<WorkerResult> RunWorkers(
    const std::string& scenario, int world, const std::string& dir,
    std::vector<std::string> extra_env = {},
    std::chrono::seconds timeout = std::chrono::seconds(120)) {
  std::vector<pid_t> pids(world, -1);
  std::vector<std::string> logs(world);
  for (int rank = 0; rank < world; ++rank) {
    logs[rank] = dir + "/worker" + std::to_string(rank) + ".log";
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    env.push_back("RANK=" + std::to_string(rank));
    env.push_back("WORLD_SIZE=" + std::to_string(world));
    env.push_back("PODSCOPE_TEST_STORE=" + dir + "/store");
    env.push_back("PODSCOPE_TEST_DIR=" + dir);
    for (const std::string& e : extra_env) env.push_back(e);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", flag = "--worker", sc = scenario;
    char* argv[] = {exe.data(), flag.data(), sc.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, logs[rank].c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    if (posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv,
                    envp.data()) == 0) {
      pids[rank] = pid;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  std::vector<WorkerResult> results(world);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int running = 0;
  for (pid_t p : pids) running += p > 0;
  while (running > 0) {
    for (int rank = 0; rank < world; ++rank) {
      if (pids[rank] <= 0) continue;
      int status = 0;
      if (waitpid(pids[rank], &status, WNOHANG) == pids[rank]) {
        results[rank].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pids[rank] = -1;
        --running;
      }
    }
    if (running == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (pid_t& p : pids) {
        if (p <= 0) continue;
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        p = -1;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int rank = 0; rank < world; ++rank) {
    std::ifstream in(logs[rank]);
    std::stringstream ss;
    ss << in.rdbuf();
    results[rank].output = ss.str();
  }
  return results;
}

inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoi(v);
}

}  // namespace podscope::runtime::testing

#endif  // PODSCOPE_TESTS_RUNTIME_COLLECTIVES_MULTIPROCESS_H_
