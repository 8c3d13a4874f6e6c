#include "common/cpu_accounting.h"

#include <dirent.h>
#include <time.h>

#include <cstdlib>
#include <fstream>

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

}  // namespace podscope::bench
