// A real child process for tests that run workers, trainers or command-line
// tools: its output on a pipe read line by line with deadlines (stderr on
// the same pipe or left on the test's), optionally its stdin on a pipe, and
// killed (SIGKILL) if still running when the object goes away.
//
// Everything the child needs is built before fork: a multi-threaded
// parent's child may only make async-signal-safe calls.
#ifndef PODSCOPE_TESTS_COMMON_TEST_PROCESS_H_
#define PODSCOPE_TESTS_COMMON_TEST_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

extern char** environ;

namespace podscope::testing {

struct TestProcessOptions {
  bool pipe_stdin = false;    // WriteLine() feeds the child's stdin
  bool merge_stderr = false;  // stderr joins stdout on the pipe
};

class TestProcess {
 public:
  // Runs argv[0] (a path, or a name looked up in PATH) with `env`
  // ("NAME=value") added in front of this process's environment.
  TestProcess(const std::vector<std::string>& argv,
              const std::vector<std::string>& env = {},
              TestProcessOptions options = {}) {
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env)
      envp.push_back(const_cast<char*>(e.c_str()));
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    int in[2] = {-1, -1}, out[2];
    if (options.pipe_stdin && pipe2(in, O_CLOEXEC) != 0) return;
    if (pipe2(out, O_CLOEXEC) != 0) {
      if (in[0] >= 0) close(in[0]), close(in[1]);
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      if (in[0] >= 0) dup2(in[0], 0);
      dup2(out[1], 1);
      if (options.merge_stderr) dup2(out[1], 2);
      execvpe(args[0], args.data(), envp.data());
      _exit(127);
    }
    if (in[0] >= 0) close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    fd_ = out[0];
  }
  ~TestProcess() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      Wait(10000);
    }
    if (fd_ >= 0) close(fd_);
  }
  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Everything read from the pipe so far.
  const std::string& output() const { return all_; }

  // Writes `line` and a newline to the child's stdin (pipe_stdin only).
  bool WriteLine(const std::string& line) {
    if (stdin_ < 0) return false;
    const std::string l = line + "\n";
    return write(stdin_, l.data(), l.size()) == static_cast<ssize_t>(l.size());
  }

  // The next line (without '\n'), or false after `timeout_ms` / at EOF.
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
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || eof_) return false;
      Fill(static_cast<int>(left.count()));
    }
  }

  void Kill(int sig = SIGKILL) {
    if (pid_ > 0 && !reaped_) kill(pid_, sig);
  }

  // Reads until EOF (or the timeout) and reaps: the raw wait status, or -1
  // when the child is still running at the deadline.
  int Wait(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(timeout_ms);
    while (fd_ >= 0 && !eof_ && std::chrono::steady_clock::now() < deadline) {
      Fill(50);
    }
    while (!reaped_ && pid_ > 0) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        status_ = status;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      usleep(20000);
    }
    return status_;
  }
  // Waits as long as it takes.
  int Wait() {
    while (fd_ >= 0 && !eof_) Fill(1000);
    if (!reaped_ && pid_ > 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      reaped_ = true;
      status_ = status;
    }
    return status_;
  }

 private:
  // Reads what is there within `timeout_ms`; false when nothing was.
  bool Fill(int timeout_ms) {
    if (fd_ < 0 || eof_) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return false;
    char buf[8192];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(n));
    all_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int stdin_ = -1;
  int fd_ = -1;
  bool eof_ = false;
  bool reaped_ = false;
  int status_ = 0;
  std::string buffer_;
  std::string all_;
};

}  // namespace podscope::testing

#endif  // PODSCOPE_TESTS_COMMON_TEST_PROCESS_H_
