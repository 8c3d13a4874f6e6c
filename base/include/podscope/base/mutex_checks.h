// Abseil's mutex deadlock detection, off where Podscope talks gRPC.
//
// An abseil built without NDEBUG (Debian's is) keeps a lock-order graph of
// every absl::Mutex in the process, updated under one process-wide lock on
// every Lock. gRPC takes such mutexes on every call, so a process serving
// or calling many peers (a profiler server, a capture of hundreds of
// workers, a job's coordinator) spends a measurable share of its CPU time
// there, and its threads wait on each other for it.
#ifndef PODSCOPE_BASE_MUTEX_CHECKS_H_
#define PODSCOPE_BASE_MUTEX_CHECKS_H_

namespace podscope::base {

// Turns abseil's deadlock detection off for the whole process (the first
// call; later calls do nothing), unless PODSCOPE_ABSL_DEADLOCK_DETECTION=1
// asks to keep it. Thread-safe; the locks taken before stay correct.
void TurnOffMutexDeadlockDetection();

}  // namespace podscope::base

#endif  // PODSCOPE_BASE_MUTEX_CHECKS_H_
