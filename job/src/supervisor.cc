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

namespace {

constexpr Clock::time_point kNever = Clock::time_point::max();

bool PeerFailure(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == kPeerFailureExitCode;
}

// Starts one worker with its stdout and stderr on pipes; the worker dies
// with the launcher.
absl::Status SpawnWorker(const WorkerSpec& spec, Worker* w) {
  w->rank = spec.rank;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot make pipes: ", strerror(errno)));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const std::string why = strerror(errno);
    close(out[0]);
    close(out[1]);
    return absl::InternalError(absl::StrCat("cannot make pipes: ", why));
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
    const std::string why = strerror(errno);
    close(out[0]);
    close(out[1]);
    close(err[0]);
    close(err[1]);
    return absl::InternalError(
        absl::StrCat("cannot fork rank ", spec.rank, ": ", why));
  }
  if (pid == 0) {
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
  w->pid = pid;
  w->fds[0] = out[0];
  w->fds[1] = err[0];
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  return absl::OkStatus();
}

// The worker to blame for a failed job: one that failed by itself rather
// than because a peer died, else one that was stopped (hung), else the
// first failure.
const Worker& Culprit(const std::vector<Worker>& workers, const Worker& first) {
  const Worker* cause = nullptr;
  for (const Worker& w : workers) {
    if (w.reaped && Failed(w.status) && !PeerFailure(w.status) &&
        w.stopped_by == 0 && (cause == nullptr || w.ended < cause->ended) &&
        !(WIFSIGNALED(w.status) && WTERMSIG(w.status) == SIGTERM &&
          &w != &first)) {
      cause = &w;
    }
  }
  if (cause != nullptr) return *cause;
  for (const Worker& w : workers) {
    if (w.stopped_by != 0) return w;
  }
  return first;
}

// One run of Supervise: the workers, the deadlines after a failure or a
// signal, and the loop that pumps output, forwards signals and reaps.
class Supervision {
 public:
  Supervision(const std::vector<WorkerSpec>& specs,
              const SuperviseOptions& options)
      : options_(options), workers_(specs.size()) {
    for (size_t i = 0; i < specs.size(); ++i) {
      start_error_ = SpawnWorker(specs[i], &workers_[i]);
      if (!start_error_.ok()) break;
    }
    if (!start_error_.ok()) {
      SignalAll(SIGTERM);
      kill_at_ = Clock::now() + GracePeriod();
    }
  }

  absl::StatusOr<SuperviseResult> Run() {
    Clock::time_point all_reaped_at = kNever;
    while (true) {
      PumpOnce();
      const bool all_reaped = Reap();
      EnforceDeadlines();
      if (all_reaped) {
        if (!AnyOpenOutput()) break;
        // Descendants may hold the pipes open: read for a moment more.
        if (all_reaped_at == kNever) all_reaped_at = Clock::now();
        if (Clock::now() - all_reaped_at > std::chrono::milliseconds(500)) {
          break;
        }
      }
    }
    for (Worker& w : workers_) {
      for (int s = 0; s < 2; ++s) CloseOutput(w, s);
    }
    if (!start_error_.ok()) return start_error_;
    return Verdict();
  }

 private:
  std::chrono::milliseconds GracePeriod() const {
    return absl::ToChronoMilliseconds(options_.grace_period);
  }

  void Message(const std::string& text) {
    std::fprintf(options_.err, "%s: %s\n", options_.name.c_str(), text.c_str());
    std::fflush(options_.err);
  }

  void SignalAll(int signo) {
    for (Worker& w : workers_) {
      if (w.pid > 0 && !w.reaped) {
        kill(w.pid, signo);
        // A stopped worker must run to act on SIGTERM.
        if (signo != SIGKILL) kill(w.pid, SIGCONT);
      }
    }
  }

  int Running() const {
    int running = 0;
    for (const Worker& w : workers_) running += (w.pid > 0 && !w.reaped);
    return running;
  }

  // Writes whole lines of a worker's output, prefixed with its rank; at
  // the end of the stream, what is left as a last line.
  void Emit(Worker& w, int stream, std::string_view data, bool eof) {
    std::FILE* f = stream == 0 ? options_.out : options_.err;
    std::string& buf = w.partial[stream];
    buf.append(data);
    size_t start = 0;
    while (true) {
      const size_t nl = buf.find('\n', start);
      if (nl == std::string::npos) break;
      NoteDoctor(std::string_view(buf).substr(start, nl - start));
      if (options_.prefix_output) std::fprintf(f, "[rank %d] ", w.rank);
      std::fwrite(buf.data() + start, 1, nl + 1 - start, f);
      start = nl + 1;
    }
    buf.erase(0, start);
    if (eof && !buf.empty()) {
      if (options_.prefix_output) std::fprintf(f, "[rank %d] ", w.rank);
      std::fwrite(buf.data(), 1, buf.size(), f);
      std::fputc('\n', f);
      buf.clear();
    }
    std::fflush(f);
  }

  // Rank 0 prints the job doctor's verdicts (docs/doctor.md); the last one
  // standing names the rank in the launcher's own verdict.
  void NoteDoctor(std::string_view line) {
    constexpr std::string_view kMark = "podscope: job doctor: ";
    if (line.substr(0, kMark.size()) != kMark) return;
    line.remove_prefix(kMark.size());
    doctor_.assign(line == "the job moves again" ? "" : line.substr(0, 4096));
  }

  void CloseOutput(Worker& w, int stream) {
    if (w.fds[stream] < 0) return;
    Emit(w, stream, {}, true);
    close(w.fds[stream]);
    w.fds[stream] = -1;
  }

  bool AnyOpenOutput() const {
    for (const Worker& w : workers_) {
      if (w.fds[0] >= 0 || w.fds[1] >= 0) return true;
    }
    return false;
  }

  // Waits up to 50 ms for output or a signal, and handles what came.
  void PumpOnce() {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> owners;
    for (size_t i = 0; i < workers_.size(); ++i) {
      for (int s = 0; s < 2; ++s) {
        if (workers_[i].fds[s] >= 0) {
          fds.push_back({workers_[i].fds[s], POLLIN, 0});
          owners.emplace_back(i, s);
        }
      }
    }
    const size_t signal_slot = fds.size();
    if (signals_.read_fd() >= 0) {
      fds.push_back({signals_.read_fd(), POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 50);
    for (size_t k = 0; k < owners.size(); ++k) {
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      Worker& w = workers_[owners[k].first];
      const int s = owners[k].second;
      char buf[65536];
      const ssize_t n = read(w.fds[s], buf, sizeof(buf));
      if (n > 0) {
        Emit(w, s, std::string_view(buf, n), false);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        CloseOutput(w, s);
      }
    }
    if (signal_slot < fds.size() && (fds[signal_slot].revents & POLLIN)) {
      ForwardSignals();
    }
  }

  void ForwardSignals() {
    unsigned char b = 0;
    while (read(signals_.read_fd(), &b, 1) == 1) {
      if (received_signal_ == 0) {
        received_signal_ = b;
        Message(absl::StrCat("received ", SignalName(b),
                             "; forwarding it to the workers"));
      }
      SignalAll(b);
      if (kill_at_ == kNever) kill_at_ = Clock::now() + GracePeriod();
    }
  }

  // Notes stopped and ended workers; true when every worker has ended.
  bool Reap() {
    bool all_reaped = true;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (w.pid <= 0 || w.reaped) continue;
      int status = 0;
      const pid_t r = waitpid(w.pid, &status, WNOHANG | WUNTRACED);
      if (r == w.pid && WIFSTOPPED(status)) {
        w.stopped_by = WSTOPSIG(status);
        Message(absl::StrCat("rank ", w.rank, " (pid ", w.pid,
                             ") was stopped by ", SignalName(w.stopped_by)));
      } else if (r == w.pid) {
        w.reaped = true;
        w.status = status;
        w.ended = Clock::now();
        if (Failed(status) && first_failure_ < 0 && received_signal_ == 0) {
          OnFirstFailure(i);
        }
      }
      if (!w.reaped) all_reaped = false;
    }
    return all_reaped;
  }

  // The others get failure_wait to end by themselves (less when the
  // failed one only saw a dead peer), then SIGTERM.
  void OnFirstFailure(size_t index) {
    first_failure_ = static_cast<int>(index);
    const Worker& w = workers_[index];
    const int running = Running();
    Message(absl::StrCat(
        "rank ", w.rank, " (pid ", w.pid, ") failed: ", Describe(w.status),
        PeerFailure(w.status) ? " (it found a dead peer)" : "",
        running > 0
            ? absl::StrCat("; stopping the other ", running, " worker(s)")
            : ""));
    absl::Duration wait = options_.failure_wait;
    if (PeerFailure(w.status)) wait = std::min(wait, absl::Seconds(2));
    term_at_ = Clock::now() + absl::ToChronoMilliseconds(wait);
  }

  void EnforceDeadlines() {
    if (term_at_ != kNever) {
      // Stopped workers cannot notice anything: no reason to wait for them.
      bool all_stopped = true;
      for (const Worker& w : workers_) {
        if (w.pid > 0 && !w.reaped && w.stopped_by == 0) all_stopped = false;
      }
      if (all_stopped || Clock::now() >= term_at_) {
        SignalAll(SIGTERM);
        term_at_ = kNever;
        if (kill_at_ == kNever) kill_at_ = Clock::now() + GracePeriod();
      }
    }
    if (Clock::now() >= kill_at_) {
      if (Running() > 0) {
        Message(absl::StrCat("workers still running after the ",
                             absl::FormatDuration(options_.grace_period),
                             " grace period: sending SIGKILL"));
        SignalAll(SIGKILL);
      }
      kill_at_ = kNever;
    }
  }

  SuperviseResult Verdict() const {
    SuperviseResult result;
    if (received_signal_ != 0) {
      result.exit_code = 128 + received_signal_;
      result.message =
          absl::StrCat("stopped by ", SignalName(received_signal_));
      return result;
    }
    if (first_failure_ < 0) return result;
    const Worker& first = workers_[first_failure_];
    result.exit_code = ExitCodeOf(first.status);
    const Worker& cause = Culprit(workers_, first);
    result.failed_rank = cause.rank;
    if (cause.stopped_by != 0) {
      result.message = absl::StrCat(
          "rank ", cause.rank, " (pid ", cause.pid, ") hung: stopped by ",
          SignalName(cause.stopped_by), ", its peers found it dead");
    } else {
      result.message = absl::StrCat("rank ", cause.rank, " (pid ", cause.pid,
                                    ") failed: ", Describe(cause.status));
    }
    if (&cause != &first) {
      absl::StrAppend(&result.message, "; first to exit: rank ", first.rank,
                      " (", Describe(first.status), ")");
    }
    if (!doctor_.empty()) {
      absl::StrAppend(&result.message, "; the job doctor said: ", doctor_);
    }
    return result;
  }

  const SuperviseOptions& options_;
  SignalForwarding signals_;
  std::vector<Worker> workers_;
  absl::Status start_error_;
  int first_failure_ = -1;  // index into workers_
  std::string doctor_;      // the job doctor's last verdict, if it stands
  int received_signal_ = 0;
  Clock::time_point term_at_ = kNever;  // SIGTERM the rest, after a failure
  Clock::time_point kill_at_ = kNever;  // SIGKILL what still runs
};

}  // namespace

absl::StatusOr<SuperviseResult> Supervise(const std::vector<WorkerSpec>& specs,
                                          const SuperviseOptions& options) {
  Supervision supervision(specs, options);
  return supervision.Run();
}

}  // namespace podscope::job::internal
