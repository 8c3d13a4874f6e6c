// Wall-clock readings shared by every module.
//
// Contract: RealtimeNs() is CLOCK_REALTIME in nanoseconds since the Unix
// epoch (it may step when the system clock is set; intervals are measured
// on the profiler's monotonic clock instead).
#ifndef PODSCOPE_BASE_TIME_H_
#define PODSCOPE_BASE_TIME_H_

#include <time.h>

#include <cstdint>

namespace podscope::base {

inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_TIME_H_
