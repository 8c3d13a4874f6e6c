// The worker supervisor of `podscope launch` and Launch() (supervisor.h).

#include "src/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "podscope/job/environment.h"

namespace podscope::job::internal {
namespace {

using Clock = std::chrono::steady_clock;

// The write end of the self-pipe the signal handler writes to.
std::atomic<int> g_signal_pipe{-1};

void OnSignal(int signo) {
  const int fd = g_signal_pipe.load();
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(signo);
    [[maybe_unused]] ssize_t n = write(fd, &b, 1);
  }
}

// Installs the forwarding handlers for SIGINT/SIGTERM and restores the
// previous ones when destroyed.
class SignalForwarding {
 public:
  SignalForwarding() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      fds_[0] = fds_[1] = -1;
      return;
    }
    g_signal_pipe.store(fds_[1]);
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalForwarding() {
    if (fds_[0] < 0) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    g_signal_pipe.store(-1);
    close(fds_[0]);
    close(fds_[1]);
  }
  int read_fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr read ends
  std::string partial[2];
  bool reaped = false;
  int status = 0;
  int stopped_by = 0;  // signal that stopped it (SIGSTOP...), if seen
  Clock::time_point ended;
};

std::string Describe(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exit code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", SignalName(WTERMSIG(status)));
  }
  return "unknown status";
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

bool Failed(int status) {
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace

std::string SignalName(int signo) {
  switch (signo) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGTERM:
      return "SIGTERM";
    case SIGSTOP:
      return "SIGSTOP";
    case SIGTSTP:
      return "SIGTSTP";
    case SIGTTIN:
      return "SIGTTIN";
    case SIGTTOU:
      return "SIGTTOU";
    default:
      return absl::StrCat("signal ", signo);
  }
}

absl::StatusOr<SuperviseResult> Supervise(const std::vector<WorkerSpec>& specs,
                                          const SuperviseOptions& options) {
  SignalForwarding signals;
  std::vector<Worker> workers(specs.size());
  auto message = [&](const std::string& text) {
    std::fprintf(options.err, "%s: %s\n", options.name.c_str(), text.c_str());
    std::fflush(options.err);
  };
  auto signal_all = [&](int signo) {
    for (Worker& w : workers) {
      if (w.pid > 0 && !w.reaped) {
        kill(w.pid, signo);
        // A stopped worker must run to act on SIGTERM.
        if (signo != SIGKILL) kill(w.pid, SIGCONT);
      }
    }
  };

  absl::Status start_error;
  for (size_t i = 0; i < specs.size(); ++i) {
    const WorkerSpec& spec = specs[i];
    Worker& w = workers[i];
    w.rank = spec.rank;
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
      start_error = absl::InternalError(
          absl::StrCat("cannot make pipes: ", strerror(errno)));
      break;
    }
    // Everything the child needs, prepared before fork.
    std::vector<char*> argv, envp;
    for (const std::string& a : spec.argv)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : spec.env)
      envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      start_error = absl::InternalError(
          absl::StrCat("cannot fork rank ", spec.rank, ": ", strerror(errno)));
      close(out[0]);
      close(out[1]);
      close(err[0]);
      close(err[1]);
      break;
    }
    if (pid == 0) {
      // The worker dies with the launcher.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(126);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      dup2(out[1], 1);
      dup2(err[1], 2);
      execvpe(argv[0], argv.data(), envp.data());
      const char* why = strerror(errno);
      [[maybe_unused]] ssize_t n = write(2, "cannot run ", 11);
      n = write(2, argv[0], strlen(argv[0]));
      n = write(2, ": ", 2);
      n = write(2, why, strlen(why));
      n = write(2, "\n", 1);
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    w.pid = pid;
    w.fds[0] = out[0];
    w.fds[1] = err[0];
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
  }

  SuperviseResult result;
  int first_failure = -1;  // index into workers
  int received_signal = 0;
  // Deadlines; kNever when unset.
  constexpr Clock::time_point kNever = Clock::time_point::max();
  Clock::time_point kill_at = kNever;
  Clock::time_point term_at = kNever;  // after a failure
  auto terminate = [&] {
    signal_all(SIGTERM);
    term_at = kNever;
    if (kill_at == kNever) {
      kill_at = Clock::now() + absl::ToChronoMilliseconds(options.grace_period);
    }
  };
  if (!start_error.ok()) {
    signal_all(SIGTERM);
    kill_at = Clock::now() + absl::ToChronoMilliseconds(options.grace_period);
  }

  auto emit = [&](Worker& w, int stream, std::string_view data, bool eof) {
    std::FILE* f = stream == 0 ? options.out : options.err;
    std::string& buf = w.partial[stream];
    buf.append(data);
    size_t start = 0;
    while (true) {
      const size_t nl = buf.find('\n', start);
      if (nl == std::string::npos) break;
      if (options.prefix_output) std::fprintf(f, "[rank %d] ", w.rank);
      std::fwrite(buf.data() + start, 1, nl + 1 - start, f);
      start = nl + 1;
    }
    buf.erase(0, start);
    if (eof && !buf.empty()) {
      if (options.prefix_output) std::fprintf(f, "[rank %d] ", w.rank);
      std::fwrite(buf.data(), 1, buf.size(), f);
      std::fputc('\n', f);
      buf.clear();
    }
    std::fflush(f);
  };

  Clock::time_point all_reaped_at = kNever;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owners;
    for (size_t i = 0; i < workers.size(); ++i) {
      for (int s = 0; s < 2; ++s) {
        if (workers[i].fds[s] >= 0) {
          fds.push_back({workers[i].fds[s], POLLIN, 0});
          owners.emplace_back(i, s);
        }
      }
    }
    const size_t signal_slot = fds.size();
    if (signals.read_fd() >= 0) fds.push_back({signals.read_fd(), POLLIN, 0});
    poll(fds.data(), fds.size(), 50);
    for (size_t k = 0; k < owners.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Worker& w = workers[owners[k].first];
      const int s = owners[k].second;
      char buf[65536];
      const ssize_t n = read(w.fds[s], buf, sizeof(buf));
      if (n > 0) {
        emit(w, s, std::string_view(buf, n), false);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        emit(w, s, {}, true);
        close(w.fds[s]);
        w.fds[s] = -1;
      }
    }
    if (signal_slot < fds.size() && (fds[signal_slot].revents & POLLIN)) {
      unsigned char b = 0;
      while (read(signals.read_fd(), &b, 1) == 1) {
        if (received_signal == 0) {
          received_signal = b;
          message(absl::StrCat("received ", SignalName(b),
                               "; forwarding it to the workers"));
        }
        signal_all(b);
        if (kill_at == kNever) {
          kill_at =
              Clock::now() + absl::ToChronoMilliseconds(options.grace_period);
        }
      }
    }
    // Reap and watch.
    bool all_reaped = true;
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      if (w.pid <= 0 || w.reaped) continue;
      int status = 0;
      const pid_t r = waitpid(w.pid, &status, WNOHANG | WUNTRACED);
      if (r == w.pid && WIFSTOPPED(status)) {
        w.stopped_by = WSTOPSIG(status);
        message(absl::StrCat("rank ", w.rank, " (pid ", w.pid,
                             ") was stopped by ", SignalName(w.stopped_by)));
      } else if (r == w.pid) {
        w.reaped = true;
        w.status = status;
        w.ended = Clock::now();
        if (Failed(status) && first_failure < 0 && received_signal == 0) {
          first_failure = static_cast<int>(i);
          int running = 0;
          for (const Worker& o : workers) running += (o.pid > 0 && !o.reaped);
          message(absl::StrCat(
              "rank ", w.rank, " (pid ", w.pid, ") failed: ", Describe(status),
              WIFEXITED(status) && WEXITSTATUS(status) == kPeerFailureExitCode
                  ? " (it found a dead peer)"
                  : "",
              running > 0
                  ? absl::StrCat("; stopping the other ", running, " worker(s)")
                  : ""));
          absl::Duration wait = options.failure_wait;
          if (WIFEXITED(status) &&
              WEXITSTATUS(status) == kPeerFailureExitCode) {
            wait = std::min(wait, absl::Seconds(2));
          }
          term_at = Clock::now() + absl::ToChronoMilliseconds(wait);
        }
      }
      if (!w.reaped) all_reaped = false;
    }
    if (term_at != kNever) {
      // Stopped workers cannot notice anything: no reason to wait for them.
      bool all_stopped = true;
      for (const Worker& w : workers) {
        if (w.pid > 0 && !w.reaped && w.stopped_by == 0) all_stopped = false;
      }
      if (all_stopped || Clock::now() >= term_at) terminate();
    }
    if (Clock::now() >= kill_at) {
      bool any = false;
      for (Worker& w : workers) any |= (w.pid > 0 && !w.reaped);
      if (any) {
        message(absl::StrCat("workers still running after the ",
                             absl::FormatDuration(options.grace_period),
                             " grace period: sending SIGKILL"));
        signal_all(SIGKILL);
      }
      kill_at = kNever;
    }
    bool open_fds = false;
    for (const Worker& w : workers)
      open_fds |= (w.fds[0] >= 0 || w.fds[1] >= 0);
    if (all_reaped) {
      if (!open_fds) break;
      // Descendants may hold the pipes open: read for a moment more.
      if (all_reaped_at == kNever) all_reaped_at = Clock::now();
      if (Clock::now() - all_reaped_at > std::chrono::milliseconds(500)) break;
    }
  }
  for (Worker& w : workers) {
    for (int s = 0; s < 2; ++s) {
      if (w.fds[s] >= 0) {
        emit(w, s, {}, true);
        close(w.fds[s]);
      }
    }
  }
  if (!start_error.ok()) return start_error;

  if (received_signal != 0) {
    result.exit_code = 128 + received_signal;
    result.message = absl::StrCat("stopped by ", SignalName(received_signal));
    return result;
  }
  if (first_failure < 0) return result;
  const Worker& first = workers[first_failure];
  result.exit_code = ExitCodeOf(first.status);
  // The cause: a worker that failed by itself rather than because a peer
  // died, else one that was stopped (hung), else the first failure.
  const Worker* cause = nullptr;
  for (const Worker& w : workers) {
    const bool peer =
        WIFEXITED(w.status) && WEXITSTATUS(w.status) == kPeerFailureExitCode;
    if (w.reaped && Failed(w.status) && !peer && w.stopped_by == 0 &&
        (cause == nullptr || w.ended < cause->ended) &&
        !(WIFSIGNALED(w.status) && WTERMSIG(w.status) == SIGTERM &&
          &w != &first)) {
      cause = &w;
    }
  }
  if (cause == nullptr) {
    for (const Worker& w : workers) {
      if (w.stopped_by != 0) {
        cause = &w;
        break;
      }
    }
  }
  if (cause == nullptr) cause = &first;
  result.failed_rank = cause->rank;
  if (cause->stopped_by != 0) {
    result.message = absl::StrCat(
        "rank ", cause->rank, " (pid ", cause->pid, ") hung: stopped by ",
        SignalName(cause->stopped_by), ", its peers found it dead");
  } else {
    result.message = absl::StrCat("rank ", cause->rank, " (pid ", cause->pid,
                                  ") failed: ", Describe(cause->status));
  }
  if (cause != &first) {
    absl::StrAppend(&result.message, "; first to exit: rank ", first.rank, " (",
                    Describe(first.status), ")");
  }
  return result;
}

}  // namespace podscope::job::internal
