#include "common/cpu_accounting.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace podscope::bench {
namespace {

int64_t ClockNs(clockid_t clock) {
  timespec ts;
  if (clock_gettime(clock, &ts) != 0) return -1;
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Linux's clock id of another thread's scheduler CPU clock (what glibc's
// pthread_getcpuclockid builds, by thread id instead of pthread_t).
clockid_t ThreadCpuClock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
}

}  // namespace

int64_t ProcessCpuNs() { return ClockNs(CLOCK_PROCESS_CPUTIME_ID); }
int64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }

CpuSnapshot TakeCpuSnapshot() {
  CpuSnapshot s;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
      if (tid <= 0) continue;
      const int64_t ns = ClockNs(ThreadCpuClock(tid));
      if (ns < 0) continue;  // exited meanwhile
      CpuSnapshot::Thread& t = s.threads[tid];
      t.cpu_ns = ns;
      std::ifstream comm("/proc/self/task/" + std::to_string(tid) + "/comm");
      std::getline(comm, t.name);
    }
    closedir(dir);
  }
  s.process_ns = ProcessCpuNs();
  return s;
}

CpuSplit SplitCpu(const CpuSnapshot& before, const CpuSnapshot& after) {
  CpuSplit split;
  split.process_ns = after.process_ns - before.process_ns;
  for (const auto& [tid, t] : after.threads) {
    auto it = before.threads.find(tid);
    const int64_t spent =
        t.cpu_ns - (it != before.threads.end() ? it->second.cpu_ns : 0);
    if (t.name.rfind("podscope-", 0) == 0) {
      split.profiler_ns += spent;
    } else {
      split.program_ns += spent;
    }
  }
  return split;
}

namespace {

int OpenCounter(uint32_t type, uint64_t config, pid_t tid, bool kernel) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = type;
  attr.config = config;
  attr.inherit = 1;
  attr.exclude_kernel = kernel ? 0 : 1;
  attr.exclude_hv = 1;
  return static_cast<int>(
      syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProcessEventCounter>> ProcessEventCounter::Open(
    uint32_t type, uint64_t config) {
  std::unique_ptr<ProcessEventCounter> c(new ProcessEventCounter());
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) {
    return absl::UnavailableError("cannot list /proc/self/task");
  }
  while (dirent* entry = readdir(dir)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid <= 0) continue;
    int fd = OpenCounter(type, config, tid, c->kernel_);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && c->kernel_ &&
        c->fds_.empty()) {
      // Kernel mode needs perf_event_paranoid <= 1: count user mode.
      c->kernel_ = false;
      fd = OpenCounter(type, config, tid, false);
    }
    if (fd < 0) {
      if (errno == ESRCH) continue;  // the thread exited meanwhile
      const int error = errno;
      closedir(dir);
      return absl::UnavailableError(
          absl::StrCat("perf_event_open of event ", type, ":", config,
                       " for thread ", tid, ": ", std::strerror(error),
                       error == ENOENT || error == EOPNOTSUPP
                           ? " (this machine has no such counter)"
                           : ""));
    }
    c->fds_.push_back(fd);
  }
  closedir(dir);
  return c;
}

ProcessEventCounter::~ProcessEventCounter() {
  for (int fd : fds_) close(fd);
}

int64_t ProcessEventCounter::Read() const {
  int64_t total = 0;
  for (int fd : fds_) {
    uint64_t value = 0;
    if (read(fd, &value, sizeof(value)) == sizeof(value)) {
      total += static_cast<int64_t>(value);
    }
  }
  return total;
}

}  // namespace podscope::bench
