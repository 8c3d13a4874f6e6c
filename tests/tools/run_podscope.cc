#include "run_podscope.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace podscope::tools::testing {
namespace {

// Reads `fds` until each reports end of input (a pty master reports EIO
// once the child has closed its side).
void Drain(int out_fd, int err_fd, std::string* out, std::string* err) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {out, err};
  int open = 2;
  char buffer[65536];
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      ADD_FAILURE() << "poll: " << std::strerror(errno);
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
}

RunResult Run(const std::vector<std::string>& args, bool tty_stderr) {
  RunResult result;
  std::vector<std::string> argv_storage = {PODSCOPE_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return result;
  }
  int err_read = -1;
  int err_write = -1;
  if (tty_stderr) {
    err_read = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (err_read < 0 || grantpt(err_read) != 0 || unlockpt(err_read) != 0) {
      ADD_FAILURE() << "cannot open a pseudo-terminal: "
                    << std::strerror(errno);
      return result;
    }
    err_write = open(ptsname(err_read), O_RDWR | O_NOCTTY | O_CLOEXEC);
  } else {
    int err_pipe[2];
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe: " << std::strerror(errno);
      return result;
    }
    err_read = err_pipe[0];
    err_write = err_pipe[1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_write, STDERR_FILENO);
  pid_t pid = -1;
  const int spawned =
      posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_write);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot run " << argv[0] << ": " << std::strerror(spawned);
    close(out_pipe[0]);
    close(err_read);
    return result;
  }
  Drain(out_pipe[0], err_read, &result.out, &result.err);
  close(out_pipe[0]);
  close(err_read);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace

RunResult RunPodscope(const std::vector<std::string>& args) {
  return Run(args, /*tty_stderr=*/false);
}

RunResult RunPodscopeWithTtyStderr(const std::vector<std::string>& args) {
  return Run(args, /*tty_stderr=*/true);
}

}  // namespace podscope::tools::testing
