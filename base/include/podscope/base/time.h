// Wall-clock readings shared by every module.
//
// Contract:
// - RealtimeNs() is CLOCK_REALTIME in nanoseconds since the Unix epoch (it
//   may step when the system clock is set; intervals are measured on the
//   profiler's monotonic clock instead).
// - EnvMs(name, fallback) is the environment variable `name` read as a
//   positive whole number of milliseconds, or `fallback` when it is unset,
//   not a number, or not positive.
#ifndef PODSCOPE_BASE_TIME_H_
#define PODSCOPE_BASE_TIME_H_

#include <time.h>

#include <cstdint>

#include "absl/time/time.h"

namespace podscope::base {

inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

absl::Duration EnvMs(const char* name, absl::Duration fallback);

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_TIME_H_
