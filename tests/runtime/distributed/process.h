// A process for the distributed tests: stdout and stderr together on one
// pipe, read line by line with deadlines; killed if still running at the
// end of the test.
#ifndef PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_
#define PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

extern char** environ;

namespace podscope::runtime::testing {

class Process {
 public:
  Process(const std::vector<std::string>& argv,
          const std::vector<std::string>& env = {}) {
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env)
      envp.push_back(const_cast<char*>(e.c_str()));
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      dup2(out[1], 2);
      execvpe(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(out[1]);
    fd_ = out[0];
  }
  ~Process() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      Wait(10000);
    }
    if (fd_ >= 0) close(fd_);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& output() const { return all_; }

  // The next line (without '\n'), or false after `timeout_ms` / at EOF.
  bool ReadLine(std::string* line, int timeout_ms) {
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
      if (left.count() <= 0 || !Fill(static_cast<int>(left.count())))
        return false;
    }
  }

  // Reads until EOF (or the timeout) and reaps: the raw wait status, or -1.
  int Wait(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(timeout_ms);
    while (fd_ >= 0 && std::chrono::steady_clock::now() < deadline) {
      if (!Fill(50) && eof_) break;
    }
    while (!reaped_) {
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

 private:
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
    buffer_.append(buf, n);
    all_.append(buf, n);
    return true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool eof_ = false;
  bool reaped_ = false;
  int status_ = 0;
  std::string buffer_;
  std::string all_;
};

}  // namespace podscope::runtime::testing

#endif  // PODSCOPE_TESTS_RUNTIME_DISTRIBUTED_PROCESS_H_
