// A child process with its stdin and stdout on pipes, for tests that run
// real worker processes.
#ifndef PODSCOPE_TESTS_PROFILER_CHILD_PROCESS_H_
#define PODSCOPE_TESTS_PROFILER_CHILD_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace podscope::profiler::testing {

class ChildProcess {
 public:
  // Runs argv[0] (a path) with `env` ("NAME=value") added to this
  // process's environment.
  ChildProcess(const std::vector<std::string>& argv,
               const std::vector<std::string>& env = {}) {
    // Everything the child needs is built before fork: a multi-threaded
    // parent's child may only make async-signal-safe calls.
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env)
      envp.push_back(const_cast<char*>(e.c_str()));
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      execvpe(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  ~ChildProcess() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    if (stdout_ >= 0) close(stdout_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  bool WriteLine(const std::string& line) {
    const std::string l = line + "\n";
    return write(stdin_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
  }

  // The next line of output (without the newline), or false after
  // `timeout_ms` or at the end of output.
  bool ReadLine(std::string* line, int timeout_ms = 10000) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(timeout_ms);
    while (true) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        *line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) return false;
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(stdout_, buf, sizeof buf);
      if (n <= 0) return false;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

  void Kill(int sig = SIGKILL) { kill(pid_, sig); }

  // The exit status as waitpid reports it.
  int Wait() {
    int status = 0;
    if (!reaped_) {
      waitpid(pid_, &status, 0);
      reaped_ = true;
      status_ = status;
    }
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace podscope::profiler::testing

#endif  // PODSCOPE_TESTS_PROFILER_CHILD_PROCESS_H_
