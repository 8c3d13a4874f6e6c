// CPU time of this process and of each of its threads, in nanoseconds, for
// overhead figures that the machine's other work does not move the way it
// moves wall time.
//
// Hardware counters (instructions, cycles) are the steadier measure where
// the machine has them (ProcessEventCounter below); many virtual machines
// do not (`perf stat -e instructions true` says "not supported"), so the
// headline figures are CPU time: the kernel's per-thread scheduler clock,
// read through clock_gettime, at nanosecond resolution.
#ifndef PODSCOPE_BENCH_COMMON_CPU_ACCOUNTING_H_
#define PODSCOPE_BENCH_COMMON_CPU_ACCOUNTING_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace podscope::bench {

// Every thread of this process and all threads together (the exited ones
// included), at one moment.
struct CpuSnapshot {
  struct Thread {
    std::string name;  // /proc/self/task/TID/comm
    int64_t cpu_ns = 0;
  };
  std::map<pid_t, Thread> threads;
  int64_t process_ns = 0;
};

CpuSnapshot TakeCpuSnapshot();

// CPU time spent between two snapshots, split by who spent it.
struct CpuSplit {
  int64_t process_ns = 0;   // everything, exited threads included
  int64_t profiler_ns = 0;  // threads named "podscope-*" (drain, writer, stock)
  int64_t program_ns = 0;   // every other live thread
};

// A thread in `after` but not in `before` counts from zero.
CpuSplit SplitCpu(const CpuSnapshot& before, const CpuSnapshot& after);

int64_t ProcessCpuNs();
// The calling thread's CPU time (user and kernel, page faults included;
// time other work held the core excluded).
int64_t ThreadCpuNs();

// A hardware (or software) event counted over every thread of this
// process: one counter per thread alive when opened, each inherited by the
// threads that thread creates later, whose counts are read with it (live
// or exited). User and kernel mode where the system allows it
// (perf_event_paranoid <= 1), else user mode only (`kernel()` says which).
// Open fails, with the reason, on machines without the event: most
// virtual machines have no instruction counter.
class ProcessEventCounter {
 public:
  // PERF_TYPE_* and its PERF_COUNT_* (linux/perf_event.h); the default is
  // instructions retired.
  static absl::StatusOr<std::unique_ptr<ProcessEventCounter>> Open(
      uint32_t type = 0, uint64_t config = 1);
  ~ProcessEventCounter();
  ProcessEventCounter(const ProcessEventCounter&) = delete;
  ProcessEventCounter& operator=(const ProcessEventCounter&) = delete;

  // The events counted since Open, over every thread.
  int64_t Read() const;
  bool kernel() const { return kernel_; }

 private:
  ProcessEventCounter() = default;
  std::vector<int> fds_;
  bool kernel_ = true;
};

}  // namespace podscope::bench

#endif  // PODSCOPE_BENCH_COMMON_CPU_ACCOUNTING_H_
