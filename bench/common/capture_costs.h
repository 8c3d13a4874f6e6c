// What a capture's work costs the threads that pay for it, measured in the
// running process: one recorded scope, one delivered signal. The overhead
// benchmarks multiply them by what a run recorded (events, samples) to
// count a capture's work on the program's threads.
#ifndef PODSCOPE_BENCH_COMMON_CAPTURE_COSTS_H_
#define PODSCOPE_BENCH_COMMON_CAPTURE_COSTS_H_

#include <string>

namespace podscope::bench {

struct UnitCosts {
  double scope_ns = 0;   // one PODSCOPE_TRACE scope recorded, above none
  double signal_ns = 0;  // one signal delivered to a thread (empty handler)
};

// The scope: the median of 5 alternations of 2 M scopes recorded (a session
// writing into `dir`) against the same loop with nothing recording. The
// signal: 100 k signals sent to this thread with an empty handler (the
// syscall that sends each included: a little above what a timer's
// delivery costs). Call with no session running.
UnitCosts MeasureUnitCosts(const std::string& dir);

}  // namespace podscope::bench

#endif  // PODSCOPE_BENCH_COMMON_CAPTURE_COSTS_H_
